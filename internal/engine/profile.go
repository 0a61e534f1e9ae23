package engine

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// CPUProfileEnv names the environment variable (read through
// Config.GetenvFunc) that, when set, makes Run write this process's CPU
// profile to the file it names (created or truncated), from Run's start to
// its return: how a benchmark profiles the herald serve processes it
// starts, which have no flag for it. Unset, nothing is profiled.
const CPUProfileEnv = "HERALD_CPU_PROFILE"

// StartCPUProfile starts writing this process's CPU profile to the file at
// path (created or truncated) and returns the function that stops it and
// closes the file. It returns an error if the file cannot be created or a
// profile is being written already.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
