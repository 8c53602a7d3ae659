package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis, as a process may name
	// itself: only the fields after the last ')' count.
	stat := "4242 (fd (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 99 1000 50 18446744073709551615\n"
	got, err := parseStat([]byte(stat))
	if err != nil || got != 3.25 {
		t.Fatalf("parseStat = %v, %v; want 3.25 s (250 + 75 ticks)", got, err)
	}
	for _, bad := range []string{"", "1 (x S 1 2", "1 (x) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) gave no error", bad)
		}
	}
}

// TestScrapeCPU: the server's process counter is read from /metrics beside
// the barge-in histogram, and its absence is reported, not taken as zero.
func TestScrapeCPU(t *testing.T) {
	body := "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n" +
		"frontdoor_barge_in_last_old_write_seconds_bucket{le=\"0.001\"} 3\n" +
		"frontdoor_barge_in_last_old_write_seconds_bucket{le=\"+Inf\"} 4\n"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer hs.Close()
	s := &server{base: hs.URL, hc: hs.Client()}
	m, err := s.metrics(context.Background())
	if err != nil || !m.hasCPU || m.cpu != 12.5 || m.barge[0.001] != 3 || len(m.barge) != 2 {
		t.Fatalf("scrape = %+v, %v", m, err)
	}
	before := serverCPU(0, scrape{hasCPU: true, cpu: 10})
	if p := serverCPU(0, m).delta(before, 100, 50, 5000); p.Seconds != 2.5 || p.PerCallSecond != 25 || p.PerAudioSecond != 50 ||
		p.PerFrame != 500 || p.Missing != "" {
		t.Fatalf("delta = %+v, want 2.5 s over 100 call-seconds, 50 s of audio and 5,000 frames: 25 and 50 ms per second, 500 µs per frame", p)
	}
	if p := serverCPU(0, m).delta(before, 100, 50, 0); p.PerFrame != 0 {
		t.Fatalf("delta without frames = %+v, want no figure per frame", p)
	}
	if p := serverCPU(0, scrape{}).delta(before, 100, 50, 5000); p.Missing == "" {
		t.Fatalf("no counter on /metrics gave %+v, want it missing", p)
	}
}
