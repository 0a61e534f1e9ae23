package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// content is the e-mail channel's content: {"subject", "text", "html"}.
type content struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
}

// messageID returns the Message-ID (without angle brackets) for a route:
// the same on every attempt, so a duplicate caused by a retry is
// recognisable in the recipient's mailbox and in mail-server logs.
func messageID(notificationID, routeID, domain string) string {
	if isToken(notificationID) && isToken(routeID) {
		return "herald." + notificationID + "." + routeID + "@" + domain
	}
	sum := sha256.Sum256([]byte(notificationID + "\x00" + routeID))
	return "herald." + hex.EncodeToString(sum[:16]) + "@" + domain
}

// isToken reports whether s can go into a Message-ID as it is.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// header is one header field, kept in order.
type header struct{ name, value string }

// buildMessage renders an RFC 5322 message with MIME bodies: text/plain,
// text/html, or multipart/alternative of both (plain first, as the
// least-preferred), each quoted-printable in UTF-8. Lines end in CRLF.
func buildMessage(from, to *mail.Address, c content, msgID string, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	headers := []header{
		{"From", from.String()},
		{"To", to.String()},
		{"Subject", encodeSubject(c.Subject)},
		{"Date", date.Format(time.RFC1123Z)},
		{"Message-ID", "<" + msgID + ">"},
		{"MIME-Version", "1.0"},
		// RFC 3834: tells auto-responders not to answer.
		{"Auto-Submitted", "auto-generated"},
	}
	writeHeaders := func(extra ...header) {
		for _, h := range append(headers, extra...) {
			buf.WriteString(h.name + ": " + h.value + "\r\n")
		}
		buf.WriteString("\r\n")
	}

	switch {
	case c.Text != "" && c.HTML != "":
		// The boundary is chosen by the writer and goes into the headers,
		// so render the parts into their own buffer first.
		var parts bytes.Buffer
		mw := multipart.NewWriter(&parts)
		for _, p := range []struct{ ctype, body string }{
			{"text/plain; charset=utf-8", c.Text},
			{"text/html; charset=utf-8", c.HTML},
		} {
			w, err := mw.CreatePart(textproto.MIMEHeader{
				"Content-Type":              {p.ctype},
				"Content-Transfer-Encoding": {"quoted-printable"},
			})
			if err != nil {
				return nil, fmt.Errorf("create part: %w", err)
			}
			if err := writeQP(w, p.body); err != nil {
				return nil, err
			}
		}
		if err := mw.Close(); err != nil {
			return nil, fmt.Errorf("close multipart: %w", err)
		}
		writeHeaders(header{"Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()})})
		buf.Write(parts.Bytes())
	default:
		ctype, body := "text/plain; charset=utf-8", c.Text
		if c.Text == "" {
			ctype, body = "text/html; charset=utf-8", c.HTML
		}
		writeHeaders(header{"Content-Type", ctype}, header{"Content-Transfer-Encoding", "quoted-printable"})
		if err := writeQP(&buf, body); err != nil {
			return nil, err
		}
		buf.WriteString("\r\n")
	}
	return buf.Bytes(), nil
}

// writeQP writes body quoted-printable encoded, with CRLF line breaks.
func writeQP(w interface{ Write([]byte) (int, error) }, body string) error {
	qp := quotedprintable.NewWriter(w)
	body = strings.ReplaceAll(body, "\r\n", "\n")
	if _, err := qp.Write([]byte(body)); err != nil {
		return fmt.Errorf("encode body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return fmt.Errorf("encode body: %w", err)
	}
	return nil
}

// encodeSubject folds line breaks (which would otherwise end the header
// and let content inject others) into spaces and RFC 2047-encodes a
// subject that is not plain ASCII.
func encodeSubject(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
	return mime.QEncoding.Encode("utf-8", s)
}
