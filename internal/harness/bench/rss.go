package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSS returns the peak resident set size (VmHWM) of process pid in
// bytes, pid 0 meaning this process. It returns 0 where /proc is missing.
func PeakRSS(pid int) int64 {
	return procStatus(pid, "VmHWM:")
}

// RSS returns the current resident set size (VmRSS) of process pid in
// bytes, pid 0 meaning this process.
func RSS(pid int) int64 {
	return procStatus(pid, "VmRSS:")
}

// ResetPeakRSS resets this process's VmHWM to its current RSS (Linux 4.0+:
// writing 5 to /proc/self/clear_refs), so a phase's peak is its own.
func ResetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// procMeminfo returns the /proc/meminfo field key in bytes; 0 where it
// cannot be read.
func procMeminfo(key string) int64 { return procKB("/proc/meminfo", key) }

func procStatus(pid int, key string) int64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	return procKB(path, key)
}

// procKB reads a "key: <n> kB" line of a /proc file, in bytes; 0 where it
// cannot be read.
func procKB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, key))
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
