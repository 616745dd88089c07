package ci

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// JUnit is a JUnit XML report in the Jenkins/Ant form (see the package documentation): the
// <testsuites> root. Add suites with Add, which keeps the counts; Write writes it.
type JUnit struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     Seconds  `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>: one algorithm × topology, its key figures as properties and its
// testcases. NewSuite fills the counts from the cases.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       Seconds    `xml:"time,attr"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Properties []Property `xml:"properties>property,omitempty"`
	Cases      []Case     `xml:"testcase"`
	SystemOut  string     `xml:"system-out,omitempty"`
}

// Property is one key figure of a suite, its value as text in the unit its name says.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one <testcase>: one verdict. At most one of Skipped, Error and Failure is set; none
// means it passed.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      Seconds  `xml:"time,attr"`
	Skipped   *Outcome `xml:"skipped,omitempty"`
	Error     *Outcome `xml:"error,omitempty"`
	Failure   *Outcome `xml:"failure,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Outcome is a testcase's failure, error or skip: Message in one line, Text the findings.
type Outcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Seconds is a duration in seconds, written with millisecond precision ("1.250").
type Seconds float64

// MarshalXMLAttr writes s as a decimal number of seconds.
func (s Seconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strconv.FormatFloat(max(float64(s), 0), 'f', 3, 64)}, nil
}

// UnmarshalXMLAttr reads what MarshalXMLAttr wrote.
func (s *Seconds) UnmarshalXMLAttr(a xml.Attr) error {
	v, err := strconv.ParseFloat(a.Value, 64)
	*s = Seconds(v)
	return err
}

// NewSuite returns the suite name with props and cases, its counts and time from the cases.
func NewSuite(name string, props []Property, cases []Case) Suite {
	s := Suite{Name: name, Properties: props, Cases: cases}
	for _, c := range cases {
		s.Tests++
		s.Time += c.Time
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	return s
}

// Add appends suites and adds their counts and time to j's.
func (j *JUnit) Add(suites ...Suite) {
	for _, s := range suites {
		j.Suites = append(j.Suites, s)
		j.Tests += s.Tests
		j.Failures += s.Failures
		j.Errors += s.Errors
		j.Skipped += s.Skipped
		j.Time += s.Time
	}
}

// Write writes j as an XML document, indented.
func (j *JUnit) Write(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(j); err != nil {
		return fmt.Errorf("encode JUnit: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// failure, errorOf and skip return a testcase outcome with message and the findings as text.
func failure(message string, findings []string) *Outcome {
	return &Outcome{Message: oneLine(message), Type: "failure", Text: strings.Join(findings, "\n")}
}

func errorOf(message string, findings []string) *Outcome {
	return &Outcome{Message: oneLine(message), Type: "error", Text: strings.Join(findings, "\n")}
}

func skip(message string, findings []string) *Outcome {
	return &Outcome{Message: oneLine(message), Text: strings.Join(findings, "\n")}
}

// oneLine joins s's lines and runs of spaces into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// prop returns a property whose value is v formatted in the shortest form that reads back
// exactly ("12345.678", "0.5", "3").
func prop(name string, v float64) Property {
	return Property{Name: name, Value: strconv.FormatFloat(v, 'f', -1, 64)}
}

// count returns a property of a count.
func count(name string, n int64) Property {
	return Property{Name: name, Value: strconv.FormatInt(n, 10)}
}
