package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU
// times (100 on every Linux platform Go supports).
const clockTicks = 100

// cpuTimes is CPU time used so far: by this process and its reaped children
// (herald serve processes, once stopped), and by the Postgres cluster.
type cpuTimes struct {
	self     time.Duration
	postgres time.Duration
	// postgresOK is false when the cluster's processes cannot be read
	// (another machine, or another user's /proc entries hidden).
	postgresOK bool
}

// postmasterPIDSQL: the server process that forked this backend (exception:
// a server function, nothing sqlc needs to type).
const postmasterPIDSQL = `SELECT pg_backend_pid()`

// readCPU reads the CPU time of this process and of every process of the
// cluster behind pool: the postmaster, its children alive now, and its
// children already reaped (its cutime and cstime). The cluster's figure
// includes its background processes (checkpointer, WAL writer, autovacuum),
// which are part of what a workload costs it.
func readCPU(ctx context.Context, pool *pgxpool.Pool) (cpuTimes, error) {
	var c cpuTimes
	var self, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return c, fmt.Errorf("read own cpu time: %w", err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		return c, fmt.Errorf("read children's cpu time: %w", err)
	}
	c.self = tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
	var backend int
	if err := pool.QueryRow(ctx, postmasterPIDSQL).Scan(&backend); err != nil {
		return c, fmt.Errorf("read backend pid: %w", err)
	}
	st, ok := procStat(backend)
	if !ok {
		return c, nil
	}
	total, ok := clusterTicks(st.ppid)
	if !ok {
		return c, nil
	}
	c.postgres = time.Duration(total) * time.Second / clockTicks
	c.postgresOK = true
	return c, nil
}

// clusterTicks sums the CPU ticks of postmaster, of its live children and
// of its reaped ones. A child reaped while its siblings are being read
// would be counted in neither place (or in both), which at the end of a
// phase, when the phase's connections close, lost seconds of CPU: the sum
// is taken again until the postmaster's reaped-children figure holds still
// across the scan.
func clusterTicks(postmaster int) (int64, bool) {
	for range 20 {
		before, ok := procStat(postmaster)
		if !ok {
			return 0, false
		}
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return 0, false
		}
		var children int64
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if s, ok := procStat(pid); ok && s.ppid == postmaster {
				children += s.utime + s.stime
			}
		}
		after, ok := procStat(postmaster)
		if !ok {
			return 0, false
		}
		if after.cutime == before.cutime && after.cstime == before.cstime {
			return after.utime + after.stime + after.cutime + after.cstime + children, true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, false
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// stat is the part of /proc/<pid>/stat the bench reads.
type stat struct {
	ppid                         int
	utime, stime, cutime, cstime int64 // clock ticks
}

// procStat parses /proc/<pid>/stat; false if it cannot be read.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields that follow start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return stat{}, false
	}
	var s stat
	var errs [5]error
	s.ppid, errs[0] = strconv.Atoi(f[1])
	s.utime, errs[1] = strconv.ParseInt(f[11], 10, 64)
	s.stime, errs[2] = strconv.ParseInt(f[12], 10, 64)
	s.cutime, errs[3] = strconv.ParseInt(f[13], 10, 64)
	s.cstime, errs[4] = strconv.ParseInt(f[14], 10, 64)
	for _, err := range errs {
		if err != nil {
			return stat{}, false
		}
	}
	return s, true
}
