//go:build !unix

package load

import "errors"

func ownCPU() cpuReading {
	return cpuReading{err: errors.New("no rusage on this platform")}
}
