package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's full Chromium: chrome-headless-shell refuses
// getUserMedia, which the microphone call needs.
const chromiumPath = "/usr/bin/chromium"

// browser starts one headless Chromium for the test, on a closed network:
// no background networking, component updates, sync or first-run pages,
// and a fresh profile. The fake media flags feed the speech WAV as the
// microphone and grant the permission without a prompt.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("%s not found (apt-get install -y chromium; .ci/test installs it): %v", chromiumPath, err)
	}
	wav, err := filepath.Abs(filepath.Join("testdata", "hello-16k.wav"))
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-audio-capture", wav+"%noloop"),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		// Allocator flags are a map: this replaces the default list, so it
		// repeats it (Translate, BlinkGenPropertyTrees) and adds the flag
		// that lets WebRTC use plain local addresses instead of .local names.
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,WebRtcHideLocalIpsWithMdns,MediaRouter,OptimizationHints"),
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	return bctx
}

// tab is one page under test, with every console error, warning and
// uncaught exception recorded.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu   sync.Mutex
	errs []string
}

func newTab(t *testing.T, bctx context.Context, timeout time.Duration) *tab {
	t.Helper()
	tctx, cancel := chromedp.NewContext(bctx)
	if err := chromedp.Do(tctx); err != nil { // opens the tab
		cancel()
		t.Fatalf("open tab: %v", err)
	}
	ctx, cancelT := context.WithTimeout(tctx, timeout)
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				tb.record("%s (%s %s:%d)", m, m.Source, m.URL, m.Line)
			}
		}
	}()
	t.Cleanup(func() {
		cancelT()
		<-done
		cancel()
	})
	return tb
}

func (tb *tab) record(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, fmt.Sprintf(format, args...))
}

// noErrors fails the test if the page logged an error or warning.
func (tb *tab) noErrors() {
	tb.t.Helper()
	time.Sleep(100 * time.Millisecond) // let the last console events arrive
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, e := range tb.errs {
		tb.t.Errorf("browser console: %s", e)
	}
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatalf("chromedp: %v", err)
	}
}

func (tb *tab) click(sel string) { tb.t.Helper(); tb.do(chromedp.Click(chromedp.CSS(sel))) }

// waitJS polls a JavaScript condition until it is true.
func (tb *tab) waitJS(what, expr string, timeout time.Duration) {
	tb.t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		text, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText.slice(0, 3000)`))
		tb.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, text)
	}
}

// eval evaluates a JavaScript expression in tb's page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshot writes the full page as a PNG artifact.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(artifacts(tb.t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", p)
}

// artifacts is $FRONTDOOR_ARTIFACTS/web, or a temporary directory.
func artifacts(t *testing.T) string {
	if d := os.Getenv("FRONTDOOR_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "web")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
