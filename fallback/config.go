package fallback

import (
	"flag"
	"fmt"
	"time"

	"github.com/frontdoorhq/frontdoor/media/clock"
	"github.com/frontdoorhq/frontdoor/stages"
)

// Config holds the fallback settings. The zero value is not useful: start
// from DefaultConfig or register the flags with Flags.
type Config struct {
	CallbackSlots   int           // callbacks claimed by operators at once
	CallbackQueue   int           // callbacks waiting to be claimed
	CallbackMaxWait time.Duration // how long an accepted callback may wait for a claim
	CallbackLease   time.Duration // how long a claim lasts before it returns to the queue
	HandoffSlots    int           // transfers claimed by agents and not yet acknowledged
	HandoffQueue    int           // handoffs waiting for an agent
	HandoffMaxWait  time.Duration // how long a caller waits for an agent
	DataDir         string        // where the callback database lives
	// Bookings cap the callbacks and handoffs one caller address, one
	// tenant and one number may book per period (zero: no caps).
	Bookings BookingLimits
	// Clock drives both queues' expiry and claim leases; nil is
	// clock.System. Serve passes the engine's clock, tests a manual one.
	Clock clock.Clock
}

// DefaultConfig returns settings that make a fresh server usable at once.
func DefaultConfig() Config {
	return Config{
		CallbackSlots:   4,
		CallbackQueue:   1000,
		CallbackMaxWait: 24 * time.Hour,
		CallbackLease:   15 * time.Minute,
		HandoffSlots:    8,
		HandoffQueue:    16,
		HandoffMaxWait:  2 * time.Minute,
		DataDir:         "data",
		Bookings:        DefaultBookingLimits,
	}
}

// Flags registers the fallback flags on fs; parsing fills c. The values in
// c when Flags is called are the defaults:
//
//	cfg := fallback.DefaultConfig()
//	cfg.Flags(fs)
func (c *Config) Flags(fs *flag.FlagSet) {
	p := c
	fs.IntVar(&p.CallbackSlots, "callback-slots", c.CallbackSlots, "callbacks claimed by operators at once")
	fs.IntVar(&p.CallbackQueue, "callback-queue", c.CallbackQueue, "accepted callbacks waiting to be claimed")
	fs.DurationVar(&p.CallbackMaxWait, "callback-max-wait", c.CallbackMaxWait, "how long an accepted callback may wait before it expires")
	fs.DurationVar(&p.CallbackLease, "callback-lease", c.CallbackLease, "how long an operator's claim lasts before the callback returns to the queue")
	fs.IntVar(&p.HandoffSlots, "handoff-slots", c.HandoffSlots, "handoffs claimed by agents and not yet acknowledged")
	fs.IntVar(&p.HandoffQueue, "handoff-queue", c.HandoffQueue, "callers waiting for a human agent")
	fs.DurationVar(&p.HandoffMaxWait, "handoff-max-wait", c.HandoffMaxWait, "how long a caller waits for an agent before the handoff expires")
	fs.IntVar(&p.Bookings.PerSource, "booking-per-source", c.Bookings.PerSource, "callbacks and handoffs one caller address may book per -booking-period (0: no cap)")
	fs.IntVar(&p.Bookings.PerTenant, "booking-per-tenant", c.Bookings.PerTenant, "callbacks and handoffs one tenant may book per -booking-period (0: no cap)")
	fs.IntVar(&p.Bookings.PerNumber, "booking-per-number", c.Bookings.PerNumber, "callbacks to one phone number per -booking-period (0: no cap)")
	fs.DurationVar(&p.Bookings.Period, "booking-period", c.Bookings.Period, "the window the booking caps count over")
	fs.StringVar(&p.DataDir, "data-dir", c.DataDir, "directory of the durable callback database")
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if err := c.CallbackLimits().Validate(); err != nil {
		return fmt.Errorf("fallback: callback stage: %w", err)
	}
	if err := c.HandoffLimits().Validate(); err != nil {
		return fmt.Errorf("fallback: handoff stage: %w", err)
	}
	if c.CallbackLease <= 0 {
		return fmt.Errorf("fallback: -callback-lease must be positive, got %v", c.CallbackLease)
	}
	return nil
}

// CallbackLimits are the callback stage's limits: claims, waiting
// callbacks, their maximum wait.
func (c Config) CallbackLimits() stages.Limits {
	return stages.Limits{Slots: c.CallbackSlots, Waiting: c.CallbackQueue, MaxAge: c.CallbackMaxWait}
}

// HandoffLimits are the handoff stage's limits: claims, waiting callers,
// their maximum wait.
func (c Config) HandoffLimits() stages.Limits {
	return stages.Limits{Slots: c.HandoffSlots, Waiting: c.HandoffQueue, MaxAge: c.HandoffMaxWait}
}
