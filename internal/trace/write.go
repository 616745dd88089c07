package trace

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// WriteCSV writes t, which must be valid, as a CSV trace that Parse reads back as
// t.Canonical() (less its Faults: a scenario lists those): the header offset,client,subject,cost
// (with ,skew when some row's offset is not zero), then one line per row, offsets and skews
// (the offset the row is sent with: a jump of its client's clock shows as a change) as
// time.Duration.String writes them (exact to the nanosecond). The output depends only on t.
func (t *Trace) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	skew := t.hasSkew()
	head := columns[:4]
	if skew {
		head = columns
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	rec := make([]string, len(head))
	rowSkew := t.RowSkews()
	for i, r := range t.Rows {
		rec[0] = r.At.String()
		rec[1] = t.Clients[r.Client]
		rec[2] = t.Subjects[r.Subject]
		rec[3] = strconv.Itoa(int(r.Cost))
		if skew {
			rec[4] = t.skewOfRow(rowSkew, i).String()
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// WriteJSONL writes t, which must be valid, as JSON Lines that Parse reads back as
// t.Canonical() (less its Faults: a scenario lists those): one object per row with the keys
// offset, client, subject, cost (and skew, the offset the row is sent with, when some row's is not
// zero), in that order.
// The output depends only on t.
func (t *Trace) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	skew := t.hasSkew()
	quote := func(s string) []byte {
		b, _ := json.Marshal(s) // a string always marshals
		return b
	}
	cq := make([][]byte, len(t.Clients))
	for i, c := range t.Clients {
		cq[i] = quote(c)
	}
	sq := make(map[uint32][]byte)
	var buf []byte
	rowSkew := t.RowSkews()
	for i, r := range t.Rows {
		s, ok := sq[r.Subject]
		if !ok {
			s = quote(t.Subjects[r.Subject])
			sq[r.Subject] = s
		}
		buf = append(buf[:0], `{"offset":"`...)
		buf = append(buf, r.At.String()...)
		buf = append(buf, `","client":`...)
		buf = append(buf, cq[r.Client]...)
		buf = append(buf, `,"subject":`...)
		buf = append(buf, s...)
		buf = append(buf, `,"cost":`...)
		buf = strconv.AppendInt(buf, int64(r.Cost), 10)
		if skew {
			buf = append(buf, `,"skew":"`...)
			buf = append(buf, t.skewOfRow(rowSkew, i).String()...)
			buf = append(buf, '"')
		}
		buf = append(buf, "}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write trace: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// hasSkew reports whether some row is sent with a non-zero clock offset.
func (t *Trace) hasSkew() bool {
	if t.Skew == nil && len(t.Jumps) == 0 {
		return false
	}
	rowSkew := t.RowSkews()
	for i := range t.Rows {
		if t.skewOfRow(rowSkew, i) != 0 {
			return true
		}
	}
	return false
}

// skewOfRow returns the clock offset row i is sent with, rowSkew being t.RowSkews().
func (t *Trace) skewOfRow(rowSkew []time.Duration, i int) time.Duration {
	if rowSkew != nil {
		return rowSkew[i]
	}
	return t.SkewOf(t.Rows[i].Client)
}

// Write writes t to the file at path in the format its extension names, creating or
// truncating it; it reports an error closing the file.
func Write(path string, t *Trace) (err error) {
	format, err := FormatOf(path)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write trace: %w", cerr)
		}
	}()
	if format == JSONL {
		return t.WriteJSONL(f)
	}
	return t.WriteCSV(f)
}
