package report

import "testing"

// TestFormat: counts with separators (Count and Rate alike), sizes in binary units, short
// durations.
func TestFormat(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Count(0), "0"}, {Count(999), "999"}, {Count(1000), "1,000"},
		{Count(1234567), "1,234,567"}, {Count(-12345), "-12,345"}, {Rate(12344.6), "12,345"},
		{Bytes(72), "72 B"}, {Bytes(2048), "2 KiB"}, {Bytes(72e8), "6.71 GiB"},
		{Micros(850), "850µs"}, {Micros(1234), "1.23ms"}, {Micros(2.5e6), "2.5s"}, {MicrosExact(1234.4), "1.234ms"},
		{Millis(123), "0.123"}, {Millis(1234), "1.23"}, {Millis(12345), "12.3"}, {Millis(123456), "123"},
		{Millis(1234567), "1,235"}, {Millis(12345678), "12,346"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}
