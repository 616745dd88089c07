package trace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/golden"
)

// genTrace draws a valid trace: names with characters CSV must quote, clients with and without
// clock offsets, some rows at one instant, costs above 1.
func genTrace(t *rapid.T) *Trace {
	names := rapid.SampledFrom([]string{"c0", "client one", "a,b", `q"uote`, "ünï", "x#"})
	tr := &Trace{}
	nc := rapid.IntRange(1, 5).Draw(t, "clients")
	for i := range nc {
		tr.Clients = append(tr.Clients, fmt.Sprintf("%s-%d", names.Draw(t, "client"), i))
	}
	ns := rapid.IntRange(1, 4).Draw(t, "subjects")
	for i := range ns {
		tr.Subjects = append(tr.Subjects, fmt.Sprintf("%s-%d", names.Draw(t, "subject"), i))
	}
	if rapid.Bool().Draw(t, "skewed") {
		for range nc {
			tr.Skew = append(tr.Skew, time.Duration(rapid.Int64Range(-3e9, 3e9).Draw(t, "skew")))
		}
	}
	var at time.Duration
	for i := range rapid.IntRange(1, 60).Draw(t, "rows") {
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprint("same", i)) > 0 {
			at += time.Duration(rapid.Int64Range(0, 2e9).Draw(t, fmt.Sprint("gap", i)))
		}
		tr.Rows = append(tr.Rows, Row{
			At:      at,
			Client:  uint16(rapid.IntRange(0, nc-1).Draw(t, fmt.Sprint("c", i))),
			Subject: uint32(rapid.IntRange(0, ns-1).Draw(t, fmt.Sprint("s", i))),
			Cost:    uint16(rapid.SampledFrom([]int{1, 1, 2, 65535}).Draw(t, fmt.Sprint("cost", i))),
		})
	}
	// Clock jumps, at any offset of the trace's (between rows, on one, past the last).
	for i := range rapid.IntRange(0, 3).Draw(t, "jumps") {
		tr.Jumps = append(tr.Jumps, Jump{
			At:     time.Duration(rapid.Int64Range(0, int64(at)+1).Draw(t, fmt.Sprint("jump-at", i))),
			Client: uint16(rapid.IntRange(0, nc-1).Draw(t, fmt.Sprint("jump-client", i))),
			Skew:   time.Duration(rapid.Int64Range(-3e9, 3e9).Draw(t, fmt.Sprint("jump-skew", i))),
		})
	}
	slices.SortStableFunc(tr.Jumps, func(a, b Jump) int { return int(min(max(a.At-b.At, -1), 1)) })
	return tr
}

// TestRoundTrip: whatever valid trace is written, as CSV or JSON Lines, reading it back
// gives its canonical form, and writing that again gives the same bytes; every row is sent with
// the clock offset it had, its client's jumps counted.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := genTrace(t)
		if err := tr.Validate(); err != nil {
			t.Fatalf("generated trace is invalid: %v", err)
		}
		want := tr.Canonical()
		for _, f := range []Format{CSV, JSONL} {
			var buf bytes.Buffer
			write := tr.WriteCSV
			if f == JSONL {
				write = tr.WriteJSONL
			}
			if err := write(&buf); err != nil {
				t.Fatalf("write %s: %v", f, err)
			}
			got, err := Parse("t."+string(f), f, bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatalf("Parse(%s) of\n%s: %v", f, buf.String(), err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s round trip (-want +got):\n%s\nfile:\n%s", f, diff, buf.String())
			}
			for i, r := range tr.Rows {
				if a, b := tr.SkewAt(r.Client, r.At), got.SkewAt(uint16(slices.Index(got.Clients, tr.Clients[r.Client])), r.At); a != b {
					t.Fatalf("%s: row %d sent with offset %s; read back with %s", f, i, a, b)
				}
			}
			var again bytes.Buffer
			write = got.WriteCSV
			if f == JSONL {
				write = got.WriteJSONL
			}
			if err := write(&again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Fatalf("%s: writing the canonical trace changed the bytes:\n%s\n---\n%s", f, buf.String(), again.String())
			}
		}
	})
}

// TestWriteGolden pins the exact bytes of both formats.
func TestWriteGolden(t *testing.T) {
	tr := &Trace{
		Rows: []Row{
			{At: 0, Client: 0, Subject: 0, Cost: 1},
			{At: 1500 * time.Microsecond, Client: 1, Subject: 0, Cost: 2},
			{At: 1500 * time.Microsecond, Client: 1, Subject: 1, Cost: 1},
			{At: 2*time.Second + 3*time.Nanosecond, Client: 0, Subject: 1, Cost: 1},
		},
		Clients:  []string{"c0", "far, ahead"},
		Subjects: []string{"user-1", "user-2"},
		Skew:     []time.Duration{0, 2 * time.Second},
	}
	var csvOut, jsonOut bytes.Buffer
	if err := tr.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteJSONL(&jsonOut); err != nil {
		t.Fatal(err)
	}
	wantCSV := "offset,client,subject,cost,skew\n" +
		"0s,c0,user-1,1,0s\n" +
		"1.5ms,\"far, ahead\",user-1,2,2s\n" +
		"1.5ms,\"far, ahead\",user-2,1,2s\n" +
		"2.000000003s,c0,user-2,1,0s\n"
	wantJSON := `{"offset":"0s","client":"c0","subject":"user-1","cost":1,"skew":"0s"}` + "\n" +
		`{"offset":"1.5ms","client":"far, ahead","subject":"user-1","cost":2,"skew":"2s"}` + "\n" +
		`{"offset":"1.5ms","client":"far, ahead","subject":"user-2","cost":1,"skew":"2s"}` + "\n" +
		`{"offset":"2.000000003s","client":"c0","subject":"user-2","cost":1,"skew":"0s"}` + "\n"
	if diff := cmp.Diff(wantCSV, csvOut.String()); diff != "" {
		t.Errorf("WriteCSV (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantJSON, jsonOut.String()); diff != "" {
		t.Errorf("WriteJSONL (-want +got):\n%s", diff)
	}
	// No skew: no skew column.
	tr.Skew = []time.Duration{0, 0}
	csvOut.Reset()
	if err := tr.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(csvOut.String(), "\n"); first != "offset,client,subject,cost" {
		t.Errorf("header without skew = %q; want offset,client,subject,cost", first)
	}
}

// TestParseAccepts: the forms a user writes by hand are read as documented.
func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name, in string
		format   Format
		want     *Trace
	}{
		{"columns in any order, cost default, spaces, BOM", "\xef\xbb\xbfsubject , offset,client\n s0 ,0s, c0\ns1,250us,c1\ns0,250us,c0\n", CSV,
			&Trace{Rows: []Row{{0, 0, 0, 1}, {250 * time.Microsecond, 1, 1, 1}, {250 * time.Microsecond, 0, 0, 1}}, Clients: []string{"c0", "c1"}, Subjects: []string{"s0", "s1"}}},
		{"zero offset without unit, skew all zero", "offset,client,subject,cost,skew\n0,c0,s0,3,0s\n1m,c0,s0,1,0s\n", CSV,
			&Trace{Rows: []Row{{0, 0, 0, 3}, {time.Minute, 0, 0, 1}}, Clients: []string{"c0"}, Subjects: []string{"s0"}}},
		// Issue 28 item 12: README's trace example left a skew cell empty, and the reader refused it.
		{"empty optional cells take their defaults", "offset,client,subject,cost,skew\n0s,a,s,,\n1ms,b,s,2,250ms\n2ms,a,s, ,\n", CSV,
			&Trace{Rows: []Row{{0, 0, 0, 1}, {time.Millisecond, 0, 1, 2}, {2 * time.Millisecond, 0, 0, 1}}, Clients: []string{"a", "b"}, Subjects: []string{"s"},
				Skew: []time.Duration{0, 250 * time.Millisecond}}},
		{"json lines, keys in any order, blank lines, skew", "{\"client\":\"a\",\"subject\":\"s\",\"offset\":\"1s\",\"skew\":\"-2s\"}\n\n{\"offset\":\"1s\",\"client\":\"b\",\"subject\":\"s\",\"cost\":2}\r\n", JSONL,
			&Trace{Rows: []Row{{time.Second, 0, 0, 1}, {time.Second, 0, 1, 2}}, Clients: []string{"a", "b"}, Subjects: []string{"s"}, Skew: []time.Duration{-2 * time.Second, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("in", tt.format, strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestErrorsGolden reads every invalid trace under testdata/trace and compares the whole
// error with the .golden file beside it: each problem names the file, line, column and field.
func TestErrorsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/trace/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			tr, err := Read(file)
			if err == nil {
				t.Fatalf("Read(%s) = %+v, nil; want an error", file, tr)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
			}
			var te *Errors
			if !errors.As(err, &te) || len(te.Problems) == 0 {
				t.Fatalf("error %T is not a non-empty *Errors: %v", err, err)
			}
			for _, p := range te.Problems {
				if p.File != file {
					t.Errorf("problem %q names file %q; want %q", p, p.File, file)
				}
			}
			golden.Check(t, file+".golden", []byte(err.Error()+"\n"))
		})
	}
	if n < 10 {
		t.Fatalf("only %d test files under testdata/trace", n)
	}
}

// TestFormatOf: the extension picks the format; anything else is refused by name.
func TestFormatOf(t *testing.T) {
	for name, want := range map[string]Format{"a.csv": CSV, "A.CSV": CSV, "x/b.jsonl": JSONL, "c.ndjson": JSONL} {
		if got, err := FormatOf(name); err != nil || got != want {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"a.json", "trace", "a.csv.gz"} {
		if _, err := FormatOf(name); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("FormatOf(%q) = %v; want ErrInvalid naming the file", name, err)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.csv")); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("Read of a missing file = %v; want a read error, not ErrInvalid", err)
	}
}

// TestValidate: a trace built in Go is checked as a file is, every problem at once.
func TestValidate(t *testing.T) {
	good := func() *Trace {
		return &Trace{Rows: []Row{{0, 0, 0, 1}, {time.Second, 0, 0, 1}}, Clients: []string{"c"}, Subjects: []string{"s"}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	tests := []struct {
		name  string
		edit  func(*Trace)
		wants []string
	}{
		{"empty", func(tr *Trace) { tr.Rows = nil }, []string{"no rows"}},
		{"order", func(tr *Trace) { tr.Rows[0].At = 2 * time.Second }, []string{"row 1: offset 1s is earlier than the row before (2s)"}},
		{"negative", func(tr *Trace) { tr.Rows[0].At = -1 }, []string{"row 0: offset -1ns is outside"}},
		{"indexes and cost", func(tr *Trace) { tr.Rows[0].Client = 1; tr.Rows[1].Subject = 4; tr.Rows[1].Cost = 0 },
			[]string{"row 0: client 1 out of range", "row 1: subject 4 out of range"}},
		{"cost", func(tr *Trace) { tr.Rows[1].Cost = 0 }, []string{"row 1: cost 0"}},
		{"names", func(tr *Trace) { tr.Clients = []string{"c", "c"}; tr.Subjects = []string{"a}"} },
			[]string{`client 1: "c" is named twice`, "subject 0:", "'}'"}},
		{"skew", func(tr *Trace) { tr.Skew = []time.Duration{0, 0} }, []string{"2 skews for 1 clients"}},
		{"skew range", func(tr *Trace) { tr.Skew = []time.Duration{25 * time.Hour} }, []string{`client "c": skew 25h0m0s is outside`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := good()
			tt.edit(tr)
			err := tr.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v; want ErrInvalid", err)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

// bigTrace returns the CSV of a trace of n rows over 100 clients and 1000 subjects.
func bigTrace(tb testing.TB, n int) []byte {
	tb.Helper()
	tr := &Trace{}
	for c := range 100 {
		tr.Clients = append(tr.Clients, fmt.Sprintf("client-%d", c))
	}
	for s := range 1000 {
		tr.Subjects = append(tr.Subjects, fmt.Sprintf("user-%d", s))
	}
	for i := range n {
		tr.Rows = append(tr.Rows, Row{At: time.Duration(i) * 137 * time.Microsecond, Client: uint16(i * 7 % 100), Subject: uint32(i * 31 % 1000), Cost: 1})
	}
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// TestParseLarge reads a trace of 10,000 rows (the size issue 18 replays) in both formats.
// Its speed is BenchmarkParse's to measure.
func TestParseLarge(t *testing.T) {
	data := bigTrace(t, 10_000)
	tr, err := Parse("big.csv", CSV, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Rows) != 10_000 || len(tr.Clients) != 100 || len(tr.Subjects) != 1000 {
		t.Fatalf("read %d rows, %d clients, %d subjects; want 10000, 100, 1000", len(tr.Rows), len(tr.Clients), len(tr.Subjects))
	}
	var js bytes.Buffer
	if err := tr.WriteJSONL(&js); err != nil {
		t.Fatal(err)
	}
	back, err := Parse("big.jsonl", JSONL, &js)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr, back); diff != "" {
		t.Fatalf("JSON Lines of the large trace read back differently:\n%s", diff)
	}
}

// BenchmarkParse reads a trace of 10,000 rows: go test -run '^$' -bench Parse ./internal/trace/
func BenchmarkParse(b *testing.B) {
	data := bigTrace(b, 10_000)
	var js bytes.Buffer
	tr, err := Parse("big.csv", CSV, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	if err := tr.WriteJSONL(&js); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		f    Format
		data []byte
	}{{CSV, data}, {JSONL, js.Bytes()}} {
		b.Run(string(c.f), func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, err := Parse("big", c.f, bytes.NewReader(c.data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/row")
		})
	}
}

// A trace as a user writes it, read; and one whose rows are out of order, refused.
func ExampleParse() {
	in := "offset,client,subject,cost\n0s,gateway-1,user-42,1\n1.5ms,gateway-2,user-42,2\n1s,gateway-1,user-7,1\n"
	tr, err := Parse("gateway.csv", CSV, strings.NewReader(in))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(tr.Rows), "rows,", tr.Clients, tr.Subjects, "span", tr.Span())
	for i, r := range tr.Rows {
		fmt.Println("row", i, "at", r.At, tr.Clients[r.Client], tr.Subjects[r.Subject], "cost", r.Cost)
	}
	_, err = Parse("gateway.csv", CSV, strings.NewReader("offset,client,subject\n2s,a,b\n1s,a,b\n"))
	fmt.Println(err)
	// Output:
	// 3 rows, [gateway-1 gateway-2] [user-42 user-7] span 1s
	// row 0 at 0s gateway-1 user-42 cost 1
	// row 1 at 1.5ms gateway-2 user-42 cost 2
	// row 2 at 1s gateway-1 user-7 cost 1
	// gateway.csv:3:1: offset: 1s is earlier than 2s on line 2: rows must be in time order (sort the file by offset)
}

// FuzzParse: no input makes the reader panic, and whatever it accepts is a valid trace
// that writes back to itself. go test -fuzz FuzzParse ./internal/trace/ explores further.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/trace/*.*")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil && !strings.HasSuffix(file, ".golden") {
			f.Add(strings.HasSuffix(file, ".jsonl"), data)
		}
	}
	f.Add(false, []byte("offset,client,subject,cost,skew\n0s,a,b,1,1s\n"))
	f.Add(true, []byte(`{"offset":"0s","client":"a\u0041","subject":"b","cost":2}`))
	f.Fuzz(func(t *testing.T, jsonl bool, data []byte) {
		format := CSV
		if jsonl {
			format = JSONL
		}
		tr, err := Parse("fuzz", format, bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("accepted an invalid trace: %v", err)
		}
		var buf bytes.Buffer
		if err := tr.WriteJSONL(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := Parse("again", JSONL, &buf)
		if err != nil || !cmp.Equal(tr, back) {
			t.Fatalf("written back and read: %v\n%s", err, cmp.Diff(tr, back))
		}
	})
}
