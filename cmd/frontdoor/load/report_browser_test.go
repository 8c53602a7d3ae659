package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/load"
)

// TestReportChartsInBrowser renders the HTML report of a fixed run
// (testdata/report.json) in headless Chromium and measures its charts:
// each has an x and a y axis label with its unit, a legend, the timeline's
// legend gives each series' mean rate ("offered 100/s", "goodput 31/s"),
// and no two texts of a chart overlap (getBoundingClientRect of every SVG
// text) or leave their chart. A screenshot of the page is kept
// ($FRONTDOOR_ARTIFACTS/load, or a temporary directory).
func TestReportChartsInBrowser(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r load.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("testdata/report.json does not read back: %v", err)
	}
	if len(r.Timeline.Bins) == 0 || r.Goodput.Deadline == 0 || len(r.Hist.FirstAud) == 0 {
		t.Fatalf("report read back without its timeline, deadline or histograms: %+v", r.Goodput)
	}
	dir := artifacts(t)
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	ctx := headless(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	type textBox struct {
		Text                     string
		Class                    string
		Left, Top, Right, Bottom float64
	}
	type chartInfo struct {
		Label   string
		XLabel  string
		YLabel  string
		Legend  []string
		Texts   []textBox
		Box     textBox
		Series  int
		Columns int
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartInfo](`[...document.querySelectorAll('svg')].map(svg => {
		const box = (e) => { const r = e.getBoundingClientRect(); return {Text: e.textContent, Class: e.getAttribute('class') || '', Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom}; };
		const label = (axis) => (svg.querySelector('.axis-label[data-axis=' + axis + ']') || {}).textContent || '';
		return {
			Label: svg.getAttribute('aria-label'), XLabel: label('x'), YLabel: label('y'),
			Legend: [...svg.querySelectorAll('.legend .legend-entry')].map(e => e.textContent),
			Texts: [...svg.querySelectorAll('text')].map(box), Box: box(svg),
			Series: svg.querySelectorAll('polyline').length, Columns: svg.querySelectorAll('rect').length,
		};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 3 {
		t.Fatalf("%d charts, want the timeline and two histograms", len(charts))
	}
	units := regexp.MustCompile(`\((s|ms)\)$`)
	for i, c := range charts {
		if !units.MatchString(c.XLabel) {
			t.Errorf("chart %q: x axis label %q without its unit", c.Label, c.XLabel)
		}
		if c.YLabel == "" {
			t.Errorf("chart %q: no y axis label", c.Label)
		}
		if len(c.Legend) == 0 {
			t.Errorf("chart %q: no legend", c.Label)
		}
		for j, a := range c.Texts {
			if a.Right-a.Left <= 0 || a.Bottom-a.Top <= 0 {
				t.Errorf("chart %q: text %q has an empty box", c.Label, a.Text)
			}
			if a.Left < c.Box.Left-0.5 || a.Right > c.Box.Right+0.5 || a.Top < c.Box.Top-0.5 || a.Bottom > c.Box.Bottom+0.5 {
				t.Errorf("chart %q: text %q %+v leaves the chart %+v", c.Label, a.Text, a, c.Box)
			}
			for _, b := range c.Texts[j+1:] {
				if a.Left < b.Right-0.5 && b.Left < a.Right-0.5 && a.Top < b.Bottom-0.5 && b.Top < a.Bottom-0.5 {
					t.Errorf("chart %q: texts overlap: %q %+v and %q %+v", c.Label, a.Text, a, b.Text, b)
				}
			}
		}
		switch i {
		case 0:
			if c.YLabel != "turns per second" || c.Series != 7 {
				t.Errorf("timeline: y label %q, %d series", c.YLabel, c.Series)
			}
			rates := regexp.MustCompile(`^[a-z]+ [0-9.]+/s$`)
			for _, e := range c.Legend {
				if !rates.MatchString(e) {
					t.Errorf("timeline legend %q does not say its rate", e)
				}
			}
			if !slicesHasPrefix(c.Legend, "offered ") || !slicesHasPrefix(c.Legend, "goodput ") {
				t.Errorf("timeline legend %q lacks offered or goodput", c.Legend)
			}
		default:
			if c.YLabel != "turns" || c.Columns < len(r.Hist.FirstAud) {
				t.Errorf("histogram %q: y label %q, %d bars", c.Label, c.YLabel, c.Columns)
			}
		}
		t.Logf("%s: x %q, y %q, legend %q", c.Label, c.XLabel, c.YLabel, c.Legend)
	}
	// The page reads as a page: its summary is not clipped, a table of
	// outcomes says each end in words, and the raw JSON is folded away.
	type pageInfo struct {
		RawFolded, SummaryClipped bool
		Outcomes, Meanings        int
		Height                    float64
	}
	info, err := chromedp.Run(ctx, chromedp.Evaluate[pageInfo](`(() => {
		const d = document.querySelector('details.raw'), s = document.querySelector('pre.summary');
		const rows = [...document.querySelectorAll('table.outcomes tr')].slice(1);
		return {
			RawFolded: !!d && !d.open && !!d.querySelector('pre') && !d.querySelector('pre').checkVisibility(),
			SummaryClipped: !s || s.scrollWidth > s.clientWidth + 1,
			Outcomes: rows.length, Meanings: rows.filter(r => r.cells[3].textContent.trim() !== '').length,
			Height: document.documentElement.scrollHeight,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(r.Callers.ByEnd) + len(r.Turns.ByEnd); !info.RawFolded || info.SummaryClipped || info.Outcomes != want || info.Meanings != want {
		t.Errorf("page %+v: want the raw JSON folded, the summary whole, %d outcomes each with its meaning", info, want)
	}
	t.Logf("page: %.0f px tall", info.Height)
	shots := map[string]chromedp.Action[[]byte]{"report.png": chromedp.FullScreenshot(100)}
	for i := range charts {
		shots[fmt.Sprintf("chart-%d.png", i+1)] = chromedp.Screenshot(chromedp.CSS(fmt.Sprintf("svg:nth-of-type(%d)", i+1)))
	}
	for name, shoot := range shots {
		png, err := chromedp.Run(ctx, shoot)
		if err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(dir, name)
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", shot)
	}
}

func slicesHasPrefix(ss []string, prefix string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// headless starts Debian's Chromium for the test (as the page's tests in
// package web do), with no network of its own, and a tab on it.
func headless(t *testing.T) context.Context {
	t.Helper()
	const chromium = "/usr/bin/chromium"
	if _, err := exec.LookPath(chromium); err != nil {
		t.Fatalf("%s not found (apt-get install -y chromium; .ci/test installs it): %v", chromium, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-pings", true),
		chromedp.WindowSize(1100, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	return ctx
}

// artifacts is $FRONTDOOR_ARTIFACTS/load, or a temporary directory.
func artifacts(t *testing.T) string {
	if d := os.Getenv("FRONTDOOR_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "load")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
