// Package jsstr writes strings as JavaScript's JSON.stringify does. The
// records exactfs shares with its TypeScript peers (state-lock owner
// records, tombstones, lease records) must be byte-identical to theirs, so
// every record encoder in the module quotes its strings here.
//
// encoding/json is not the same: it escapes U+2028 and U+2029 always, and
// '<', '>' and '&' unless told not to; JSON.stringify escapes none of them.
package jsstr

import "unicode/utf8"

// Append appends s, quoted, as JSON.stringify writes it: '"' and '\\' are
// escaped, control characters below U+0020 become their short escape
// (\b \f \n \r \t) or \u00XX, and everything else is copied as it is.
//
// A byte that is not valid UTF-8 cannot occur in a JavaScript string; it is
// written as the escape \ufffd, which a JSON reader decodes to U+FFFD, the
// character a JavaScript runtime gives such a byte when it decodes it. The
// escape keeps the output valid UTF-8 whatever s holds.
func Append(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // s[start:i] is pending, needing no escape
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
