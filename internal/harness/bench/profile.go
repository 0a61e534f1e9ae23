package bench

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartCPUProfile starts writing this process's CPU profile to the file at
// path (created or truncated) and returns the function that stops it and
// closes the file.
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
