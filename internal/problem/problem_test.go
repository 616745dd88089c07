package problem

import "testing"

func TestString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "a.csv", Line: 3, Column: 7, Field: "offset", Msg: "bad"}, "a.csv:3:7: offset: bad"},
		{Problem{File: "a.csv", Line: 3, Msg: "bad"}, "a.csv:3: bad"},
		{Problem{File: "a.yaml", Msg: "empty scenario file"}, "a.yaml: empty scenario file"},
		{Problem{File: "a.yaml", Column: 4, Msg: "no line, no column"}, "a.yaml: no line, no column"},
		{Problem{Line: 5, Field: "arrival.rate", Msg: "bad"}, "line 5: arrival.rate: bad"},
		{Problem{Line: 5, Column: 2, Msg: "bad"}, "line 5:2: bad"},
		{Problem{Field: "duration", Msg: "bad (set by --duration)"}, "duration: bad (set by --duration)"},
		{Problem{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q; want %q", tt.p, got, tt.want)
		}
	}
	if got := Lines([]Problem{tests[0].p, tests[1].p}); got != "a.csv:3:7: offset: bad\na.csv:3: bad" {
		t.Errorf("Lines = %q", got)
	}
}
