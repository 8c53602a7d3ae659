//go:build unix

package load

import "syscall"

// ownCPU reads the generator's own cumulative CPU time (every thread:
// callers, readers, timers, the garbage collector).
func ownCPU() cpuReading {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuReading{err: err}
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return cpuReading{seconds: tv(ru.Utime) + tv(ru.Stime), source: "rusage"}
}
