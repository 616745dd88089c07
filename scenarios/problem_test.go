package scenarios

import (
	"strings"
	"testing"
)

// TestProblemAt: a problem found after loading names the file, the line of the field and the
// field; a field the file does not write takes the line of its nearest enclosing field.
func TestProblemAt(t *testing.T) {
	s, err := Load("testdata/custom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ field, want string }{
		{"algorithms[1].script", "testdata/custom.yaml:9: algorithms[1].script: boom"},
		{"algorithms[2].script", "testdata/custom.yaml:16: algorithms[2].script: boom"},
		{"algorithms[2].time", "testdata/custom.yaml:15: algorithms[2].time: boom"},
	} {
		if got := s.ProblemAt(tt.field, "boom").String(); got != tt.want {
			t.Errorf("ProblemAt(%q) = %q; want %q", tt.field, got, tt.want)
		}
	}
}

// TestCustomNamedReference: a custom script may not take the reference script's name, which the
// runner gives its calibration entry.
func TestCustomNamedReference(t *testing.T) {
	data := `version: 1
algorithms:
  - name: reference
    script: limiter.lua
    keys: ["k:{{tag}}"]
    allowed: {equals: 1}
    contract: {kind: none}
`
	_, err := parse("testdata/ref.yaml", []byte(data), designNames)
	if err == nil || !strings.Contains(err.Error(), `testdata/ref.yaml:3: algorithms[0].name: "reference" is the name of the reference script`) {
		t.Errorf("parse = %v; want the reference name refused at line 3", err)
	}
}
