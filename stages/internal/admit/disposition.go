package admit

import (
	"fmt"
)

// Disposition is the typed outcome of an admission operation or the state of
// a unit of work. Its zero value is invalid and prints as "invalid".
type Disposition uint8

// Offer returns Queued, Overloaded, Expired, Stale, OutOfOrder or Closed.
// Take returns Admitted, Busy, Expired, Empty or Closed.
// Release returns Completed or Cancelled; ReleaseFailed Failed or Cancelled.
// State reports Queued, Active, Expired, Cancelled, Completed or Failed.
const (
	Queued Disposition = iota + 1
	Admitted
	Overloaded
	Expired
	Stale
	OutOfOrder
	Closed
	Busy
	Empty
	Active
	Cancelled
	Completed
	// Failed: the lease was released after its backend failed
	// (ReleaseFailed). Like Completed it is the release evidence; it is
	// counted apart so that a failure is never shown as a success.
	Failed
)

var dispositionNames = [...]string{
	Queued:     "queued",
	Admitted:   "admitted",
	Overloaded: "overloaded",
	Expired:    "expired",
	Stale:      "stale",
	OutOfOrder: "out-of-order",
	Closed:     "closed",
	Busy:       "busy",
	Empty:      "empty",
	Active:     "active",
	Cancelled:  "cancelled",
	Completed:  "completed",
	Failed:     "failed",
}

// Dispositions lists every valid disposition in declaration order.
func Dispositions() []Disposition {
	out := make([]Disposition, 0, len(dispositionNames)-1)
	for d := Queued; d <= Failed; d++ {
		out = append(out, d)
	}
	return out
}

func (d Disposition) String() string {
	if d == 0 || int(d) >= len(dispositionNames) {
		return "invalid"
	}
	return dispositionNames[d]
}

// Refusal reports whether d turns work away before it is retained.
func (d Disposition) Refusal() bool {
	switch d {
	case Overloaded, Expired, Stale, OutOfOrder, Closed:
		return true
	}
	return false
}

// MarshalText encodes d as its name, so JSON carries "out-of-order", not 6.
func (d Disposition) MarshalText() ([]byte, error) {
	if d.String() == "invalid" {
		return nil, fmt.Errorf("stages: invalid disposition %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText decodes a disposition name.
func (d *Disposition) UnmarshalText(b []byte) error {
	p, err := ParseDisposition(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDisposition returns the disposition named s.
func ParseDisposition(s string) (Disposition, error) {
	for i, name := range dispositionNames {
		if i > 0 && name == s {
			return Disposition(i), nil
		}
	}
	return 0, fmt.Errorf("stages: unknown disposition %q", s)
}
