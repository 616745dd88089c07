package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

func (p *parser) jsonl(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if p.jsonLine(line, b) != nil {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			p.add(line+1, 0, "", "line longer than %d bytes", maxLine)
			return nil
		}
		return fmt.Errorf("read trace %s: %w", p.file, err)
	}
	return nil
}

// jsonLine reads one JSON object; it returns errStop when the read must end. It scans the line
// itself (a flat object of strings and numbers), which is several times faster than
// encoding/json's tokenizer and knows the column of every key and value.
func (p *parser) jsonLine(line int, b []byte) error {
	sc := jsonScan{b: b}
	fail := func(at int, format string, args ...any) error { return p.add(line, at+1, "", format, args...) }
	sc.ws()
	if !sc.eat('{') {
		return fail(sc.i, "want a JSON object {\"offset\": ..., \"client\": ..., \"subject\": ...}")
	}
	var fs [5]field
	sc.ws()
	if !sc.eat('}') {
		for {
			sc.ws()
			kc := sc.i
			if sc.i >= len(b) {
				return fail(sc.i, "the line ends inside the JSON object (one whole object per line)")
			}
			if sc.peek() != '"' {
				return fail(sc.i, "want a quoted field name")
			}
			key, msg := sc.str()
			if msg != "" {
				return fail(sc.i, "%s", msg)
			}
			sc.ws()
			if !sc.eat(':') {
				return fail(sc.i, "want : after the field name %q", key)
			}
			sc.ws()
			vc := sc.i
			kind, text, msg := sc.value()
			if msg != "" {
				return fail(sc.i, "%s", msg)
			}
			if end, err := p.jsonField(&fs, line, kc, vc, key, kind, text); end || err != nil {
				return err
			}
			sc.ws()
			if sc.eat(',') {
				continue
			}
			if sc.eat('}') {
				break
			}
			if sc.i >= len(b) {
				return fail(sc.i, "the line ends inside the JSON object (one whole object per line)")
			}
			return fail(sc.i, "want , or } after a value")
		}
	}
	sc.ws()
	if sc.i < len(b) {
		return fail(sc.i, "more after the object: one object per line")
	}
	missing := false
	for k, c := range requiredColumns {
		if !fs[k].present {
			missing = true
			if err := p.add(line, 0, c, "missing (offset, client and subject are required)"); err != nil {
				return err
			}
		}
	}
	if missing {
		return nil
	}
	return p.row(line, fs[0], fs[1], fs[2], fs[3], fs[4])
}

// jsonField records in fs the value of key (its kind and text as jsonScan.value reads them; the
// key at byte kc of the line, the value at vc), or a problem with it. end says the problem ends
// the line (a value of the wrong type); err is errStop when the read must end.
func (p *parser) jsonField(fs *[5]field, line, kc, vc int, key string, kind byte, text string) (end bool, err error) {
	k := slices.Index(columns, key)
	switch {
	case kind == '[' || kind == '{':
		what := map[byte]string{'[': "an array", '{': "an object"}[kind]
		return true, p.add(line, vc+1, key, "want %s, got %s", jsonKind(k), what)
	case k < 0:
		return false, p.add(line, kc+1, "", "unknown field %q (want %s)", key, strings.Join(columns, ", "))
	case fs[k].present:
		return false, p.add(line, kc+1, key, "given twice")
	case kind == '"' && k == 3:
		return true, p.add(line, vc+1, key, "want an integer, got the string %q", text)
	case kind == '0' && k != 3:
		return true, p.add(line, vc+1, key, "want %s, got the number %s", jsonKind(k), text)
	case kind == 'l':
		return true, p.add(line, vc+1, key, "want %s, got %s", jsonKind(k), text)
	}
	fs[k] = field{present: true, text: text, line: line, col: vc + 1}
	return false, nil
}

// jsonScan scans a flat JSON object on one line: b[i:] is what is left.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScan) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string at s.i (a quote), or says what is wrong (s.i at the problem).
func (s *jsonScan) str() (string, string) {
	start := s.i
	s.i++
	escaped := false
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i++
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), ""
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				s.i = start
				return "", "invalid escape in a string"
			}
			return out, ""
		case c < 0x20:
			return "", "control character in a string"
		}
	}
	return "", "the line ends inside a string"
}

// value reads a value at s.i: its kind ('"' string, '0' number, 'l' true, false or null, '['
// or '{' for an array or object, not read), its text, or what is wrong.
func (s *jsonScan) value() (byte, string, string) {
	switch c := s.peek(); {
	case c == '"':
		text, msg := s.str()
		return '"', text, msg
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) && strings.IndexByte("0123456789+-.eE", s.b[s.i]) >= 0 {
			s.i++
		}
		text := string(s.b[start:s.i])
		if !json.Valid(s.b[start:s.i]) {
			s.i = start
			return 0, "", fmt.Sprintf("invalid number %s", text)
		}
		return '0', text, ""
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return 'l', lit, ""
			}
		}
	case c == '[' || c == '{':
		return c, "", ""
	case s.i >= len(s.b):
		return 0, "", "the line ends inside the JSON object (one whole object per line)"
	}
	return 0, "", fmt.Sprintf("unexpected %q", s.b[s.i])
}

// jsonKind names the JSON type column k takes.
func jsonKind(k int) string {
	switch k {
	case 0, 4:
		return "a duration string such as \"1.5ms\""
	case 3:
		return "an integer"
	}
	return "a string"
}
