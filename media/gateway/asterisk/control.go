package asterisk

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"github.com/frontdoorhq/frontdoor/media/gateway"
)

func itoa(n int) string { return strconv.Itoa(n) }

// parse reads a control message in either format; key is "event" or
// "command", the field that names a JSON message.
func parse(data []byte, key string) (*message, error) {
	if err := checkText(gateway.Frame{Data: data}); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); t[0] == '{' {
		return parseJSON(t, key)
	}
	return parsePlain(string(data))
}

func parseJSON(data []byte, key string) (*message, error) {
	var raw map[string]json.RawMessage
	if err := gateway.UnmarshalJSON(name, "", data, &raw); err != nil {
		return nil, err
	}
	m := &message{params: map[string]string{}}
	for k, v := range raw {
		switch k {
		case "channel_variables":
			if err := gateway.UnmarshalJSON(name, "", v, &m.vars); err != nil {
				return nil, err
			}
		default:
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v) // numbers and booleans keep their JSON
			}
			m.params[k] = s
		}
	}
	if m.name = m.params[key]; m.name == "" {
		return nil, gateway.Missing(name, "", key)
	}
	m.id = m.params["correlation_id"]
	return m, nil
}

// parsePlain reads "NAME key:value key:value" or "NAME id".
func parsePlain(s string) (*message, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\r\n") {
		return nil, gateway.Errorf(name, "", "", gateway.ErrMalformed, "more than one line")
	}
	fields := strings.Fields(s)
	m := &message{name: fields[0], params: map[string]string{}}
	for _, r := range m.name {
		if r != '_' && !unicode.IsUpper(r) && !unicode.IsDigit(r) {
			return nil, gateway.Errorf(name, "", "", gateway.ErrMalformed, "%q is not a control message name", truncate(m.name))
		}
	}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, ":")
		switch {
		case !ok && m.id == "":
			m.id = f
		case !ok:
			return nil, gateway.Errorf(name, m.name, "", gateway.ErrMalformed, "a second positional parameter %q", truncate(f))
		default:
			m.params[k] = v
		}
	}
	if id := m.params["correlation_id"]; id != "" {
		m.id = id
	}
	return m, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// render writes a control message: "NAME id k:v" or {"key":"NAME",...}.
func (c Codec) render(dst []byte, msg, key, id string, params [][2]string) (gateway.Frame, error) {
	if c.Control == JSON {
		m := map[string]string{key: msg}
		if id != "" {
			m["correlation_id"] = id
		}
		for _, p := range params {
			m[p[0]] = p[1]
		}
		return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
	}
	dst = append(dst, msg...)
	if id != "" {
		if strings.ContainsFunc(id, unicode.IsSpace) || strings.Contains(id, ":") {
			return gateway.Frame{}, gateway.Errorf(name, msg, "correlation_id", gateway.ErrUnsupported, "%q cannot be written in plain text", id)
		}
		dst = append(append(dst, ' '), id...)
	}
	for _, p := range params {
		if strings.ContainsFunc(p[1], unicode.IsSpace) {
			return gateway.Frame{}, gateway.Errorf(name, msg, p[0], gateway.ErrUnsupported, "%q cannot be written in plain text", p[1])
		}
		dst = append(append(append(append(dst, ' '), p[0]...), ':'), p[1]...)
	}
	return gateway.Frame{Data: dst}, nil
}

func (c Codec) renderStart(dst []byte, params [][2]string, vars map[string]string) (gateway.Frame, error) {
	var kept [][2]string
	for _, p := range params {
		if p[1] != "" {
			kept = append(kept, p)
		}
	}
	if c.Control == PlainText {
		for k := range vars {
			if k != "channel" {
				return gateway.Frame{}, gateway.Errorf(name, EventMediaStart, "channel_variables", gateway.ErrUnsupported, "not in plain text")
			}
		}
		return c.render(dst, EventMediaStart, "event", "", kept)
	}
	m := map[string]any{"event": EventMediaStart}
	for _, p := range kept {
		if n, err := strconv.Atoi(p[1]); err == nil && (p[0] == "optimal_frame_size" || p[0] == "ptime") {
			m[p[0]] = n
		} else {
			m[p[0]] = p[1]
		}
	}
	cv := map[string]string{}
	for k, v := range vars {
		if k != "channel" {
			cv[k] = v
		}
	}
	if len(cv) > 0 {
		m["channel_variables"] = cv
	}
	return gateway.Frame{Data: gateway.MarshalJSON(dst, m)}, nil
}
