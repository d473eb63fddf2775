package bench

import (
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machineCPU is read from /proc/stat: the busy and total CPU time of all
// the machine's CPUs together (its "cpu" line, in clock ticks since boot)
// and how many CPUs it has (its "cpuN" lines).
type machineCPU struct {
	busy, total uint64
	cpus        int
}

// readMachineCPU reads /proc/stat; ok is false where there is none.
func readMachineCPU() (machineCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, false
	}
	return parseProcStat(b)
}

// parseProcStat reads the aggregate "cpu" line (user nice system idle
// iowait irq softirq steal ...) and counts the "cpuN" lines. Busy is user,
// nice, system, irq and softirq; idle and iowait are idle (waiting on the
// disk leaves the CPU free); steal, time the hypervisor gave to others,
// counts in neither, so a crowded host does not read as a busy one. guest
// time is already inside user.
func parseProcStat(b []byte) (machineCPU, bool) {
	var m machineCPU
	found := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			m.cpus++
			continue
		}
		if len(f) < 8 {
			return machineCPU{}, false
		}
		var v [7]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				return machineCPU{}, false
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		m.busy = user + nice + system + irq + softirq
		m.total = m.busy + idle + iowait
		found = true
	}
	return m, found && m.cpus > 0
}

// busyShare is the share of the machine's CPU time that was busy between
// an earlier reading and m.
func (m machineCPU) busyShare(earlier machineCPU) (float64, bool) {
	if m.total <= earlier.total || m.busy < earlier.busy {
		return 0, false
	}
	return float64(m.busy-earlier.busy) / float64(m.total-earlier.total), true
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startCPUProfile writes a CPU profile to path until the returned func runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
