package admit

import (
	"fmt"
	"math"
	"time"
)

// Policy selects how a Controller admits work. Frontdoor is the product;
// the others are baselines that exist only to be measured against it (see
// `frontdoor load`), each reproducing what a common simpler design does.
type Policy uint8

const (
	// Frontdoor bounds slots, waiting work and age, and holds a cancelled
	// lease until the backend confirms it stopped.
	Frontdoor Policy = iota
	// Unbounded accepts everything, first in first out, with no age limit
	// and no concurrency limit: what a plain queue in front of a backend does.
	Unbounded
	// Semaphore limits concurrency only; work waits without bound in count
	// or age.
	Semaphore
	// ReleaseOnCancel is Frontdoor except that a cancelled lease is returned
	// at the cancel request instead of on cleanup evidence, so new work can
	// be admitted onto a backend that is still busy.
	ReleaseOnCancel
)

var policyNames = [...]string{"frontdoor", "unbounded", "semaphore", "release-on-cancel"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy returns the policy named s.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("stages: unknown policy %q (want frontdoor, unbounded, semaphore or release-on-cancel)", s)
}

// Set implements flag.Value.
func (p *Policy) Set(s string) error {
	v, err := ParsePolicy(s)
	if err == nil {
		*p = v
	}
	return err
}

// MarshalText encodes p as its name.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Baseline reports whether p is one of the baselines measured against the
// product (anything but Frontdoor, the zero Policy).
func (p Policy) Baseline() bool { return p != Frontdoor }

// WithPolicy selects a baseline policy. The default is Frontdoor.
func WithPolicy(p Policy) Option {
	return func(c *Controller) { c.policy = p }
}

// effective returns the limits the policy enforces.
func (p Policy) effective(l Limits) Limits {
	const unlimited = math.MaxInt32
	switch p {
	case Unbounded:
		l.Slots, l.Waiting, l.MaxAge = unlimited, unlimited, time.Duration(math.MaxInt64)
	case Semaphore:
		l.Waiting, l.MaxAge = unlimited, time.Duration(math.MaxInt64)
	}
	return l
}
