package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/limitbench/limitbench/result"
)

// TestLiveMetricsPrometheus runs a short `limitbench run` with --metrics-addr scraped by a real
// Prometheus (Debian's, started here on a loopback port), --prometheus-remote-write to the same
// Prometheus, and --otlp-endpoint to an in-process OTLP/HTTP receiver (Prometheus 2.42 has no
// OTLP receiver), and checks that each destination's admitted and request counts match
// result.json.
func TestLiveMetricsPrometheus(t *testing.T) {
	if _, err := exec.LookPath("prometheus"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is not installed (.ci/run installs it)")
		}
		t.Skip("prometheus is not installed")
	}
	metricsAddr := freeAddr(t)
	prom := startPrometheus(t, metricsAddr)
	otlp := newOTLPReceiver(t)

	dir := t.TempDir()
	scenario := filepath.Join(dir, "live.yaml")
	body := "version: 1\nname: live\ntopologies: [single]\nduration: 2s\nwarmup: 300ms\nseed: 3\nclients: 4\n" +
		"arrival: {rate: 120}\nkeys: {count: 4, distribution: uniform}\nlimit: {limit: 20, window: 1s}\nalgorithms: [gcra, fixed-window]\n"
	if err := os.WriteFile(scenario, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--backend", "process", "--no-reference", "--quiet", "--out", out, "--metrics-addr", metricsAddr,
		"--prometheus-remote-write", prom + "/api/v1/write", "--otlp-endpoint", otlp.url, scenario}
	// A busy machine can leave a verdict inconclusive (exit 1); the figures are written all the same.
	if code := run(args, &stdout, &stderr); code != exitOK && code != exitFailed {
		t.Fatalf("run = exit %d; stderr:\n%s", code, stderr.String())
	}
	res, err := result.Read(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 2 {
		t.Fatalf("result.json has %d entries; want 2", len(res.Entries))
	}
	for i, e := range res.Entries {
		if e.Allowed == 0 || e.Denied == 0 {
			t.Fatalf("%s admitted %d and denied %d: the limit was not pressed", e.Algorithm, e.Allowed, e.Denied)
		}
		sel := fmt.Sprintf(`algorithm=%q,topology=%q,scenario="live"`, e.Algorithm, e.Topology)
		// Remote write: the last push happens after the run, so every count is final.
		for name, want := range map[string]int64{"limitbench_admitted_total": e.Allowed, "limitbench_requests_total": e.Requests} {
			if got := promQuery(t, prom, fmt.Sprintf(`last_over_time(%s{%s,job=""}[10m])`, name, sel)); got != float64(want) {
				t.Errorf("remote write: %s of %s = %v; result.json has %d", name, e.Algorithm, got, want)
			}
			if got := otlp.last(name[:len(name)-len("_total")], e.Algorithm); got != float64(want) {
				t.Errorf("OTLP: %s of %s = %v; result.json has %d", name, e.Algorithm, got, want)
			}
		}
		// Scrapes: the first algorithm's final counts were scraped while the second ran; the
		// last's may have ended between two scrapes (what remote write is for).
		// A loaded machine may let a measurement pass between two scrapes: checked when scraped.
		if got, ok := promQueryOpt(t, prom, fmt.Sprintf(`last_over_time(limitbench_admitted_total{%s,job="limitbench"}[10m])`, sel)); !ok {
			t.Logf("scrape: no sample of %s was scraped", e.Algorithm)
		} else if i == 0 && got != float64(e.Allowed) || got > float64(e.Allowed) || got == 0 {
			t.Errorf("scrape: limitbench_admitted_total of %s = %v; result.json has %d", e.Algorithm, got, e.Allowed)
		}
		// The limit of 20 a second: fixed-window's window holds 20, gcra's bucket 20 and a refill of 20.
		allowance := map[string]float64{"fixed-window": 20, "gcra": 40}[e.Algorithm]
		if got := promQuery(t, prom, fmt.Sprintf(`last_over_time(limitbench_window_allowance_permits{%s,job=""}[10m])`, sel)); got != allowance {
			t.Errorf("limitbench_window_allowance_permits of %s = %v; want %v", e.Algorithm, got, allowance)
		}
	}
	// The streaming verifier's live count, a gauge only while a measurement runs: none, for
	// correct limiters, whenever a scrape or push caught it (a loaded machine may let both
	// measurements pass between two of them; verify's TestStreamLogMatchesAdmissionLogOnRedis
	// checks the count itself).
	if got, ok := promQueryOpt(t, prom, `max(max_over_time(limitbench_violations_definite_live{scenario="live"}[10m]))`); ok && got != 0 {
		t.Errorf("limitbench_violations_definite_live reached %v; want 0 for correct limiters", got)
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startPrometheus starts Prometheus on a loopback port with the remote-write receiver on,
// scraping target every 200 ms as job "limitbench", and returns its base URL; it is stopped
// when the test ends.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 200ms, scrape_timeout: 150ms}\nscrape_configs:\n"+
		"  - job_name: limitbench\n    static_configs: [{targets: [%q]}]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command("prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--web.enable-remote-write-receiver")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s; its log:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery runs an instant query and returns its one value, failing the test unless exactly one
// series answers.
func promQuery(t *testing.T, base, q string) float64 {
	t.Helper()
	v, ok := promQueryOpt(t, base, q)
	if !ok {
		t.Fatalf("query %s: no series; want 1", q)
	}
	return v
}

// promQueryOpt is promQuery, with false instead of a failure when q finds no series.
func promQueryOpt(t *testing.T, base, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" || len(r.Data.Result) > 1 {
		t.Fatalf("query %s: status %s %s, %d series; want at most 1", q, r.Status, r.Error, len(r.Data.Result))
	}
	if len(r.Data.Result) == 0 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", q, r.Data.Result[0].Value[1], err)
	}
	return v, true
}

// otlpReceiver is an in-process OTLP/HTTP metrics receiver: it decodes each export request with
// the OTLP protobuf types and keeps the last value of every sum by name and algorithm.
type otlpReceiver struct {
	url  string
	mu   sync.Mutex
	sums map[[2]string]float64
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{sums: map[[2]string]float64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var m colmetrics.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &m)
		}
		if err != nil || req.URL.Path != "/v1/metrics" {
			http.Error(w, fmt.Sprintf("bad request to %s: %v", req.URL.Path, err), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rm := range m.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, mt := range sm.GetMetrics() {
					for _, dp := range mt.GetSum().GetDataPoints() {
						alg := ""
						for _, a := range dp.GetAttributes() {
							if a.GetKey() == "algorithm" {
								alg = a.GetValue().GetStringValue()
							}
						}
						r.sums[[2]string{mt.GetName(), alg}] = dp.GetAsDouble()
					}
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *otlpReceiver) last(name, algorithm string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sums[[2]string{name, algorithm}]
}
