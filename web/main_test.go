package web_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine is ignored. chromedp's goroutines end by the time TestBrowser's
// cleanup has cancelled the tab, browser and allocator contexts (cancelling
// the allocator waits for the Chromium process and its readers); the pion
// stand-in closes its peer connection and waits for its readers; the load
// generator's callers end before Burst returns, and Page.Close waits for it.
// If a chromedp upgrade ever leaves a goroutine behind, ignore it here by its
// top function, with the reason, rather than dropping the check.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
