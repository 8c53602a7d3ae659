package fallback

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxBody bounds an operator request's body.
const maxBody = 4096

// CallbackHandler serves the operators' callback API (JSON):
//
//	GET  /v1/callbacks?status=pending,claimed&limit=100  list, numbers redacted
//	POST /v1/callbacks/claim             {"operator"}         200 {"callback"} with the full number; 204 none waiting; 409 slots busy
//	POST /v1/callbacks/{ticket}/complete {"attempt","note"}   200 {"callback"}
//	POST /v1/callbacks/{ticket}/fail     {"attempt","reason"} 200 {"callback"}
//
// Errors are {"error": {"code", "message"}} with 400, 404 or 409. Mount it
// at /v1/callbacks and /v1/callbacks/ on an operators-only listener or
// behind authentication: a claim reveals a caller's number.
func (s *Service) CallbackHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/callbacks", s.httpList)
	mux.HandleFunc("POST /v1/callbacks/claim", s.httpClaim)
	mux.HandleFunc("POST /v1/callbacks/{ticket}/complete", func(w http.ResponseWriter, r *http.Request) { s.httpFinish(w, r, StatusCompleted) })
	mux.HandleFunc("POST /v1/callbacks/{ticket}/fail", func(w http.ResponseWriter, r *http.Request) { s.httpFinish(w, r, StatusFailed) })
	return mux
}

// RedactedCallback is c with its number redacted, for lists and logs.
func RedactedCallback(c Callback) Callback {
	c.Number = Redact(c.Number)
	return c
}

func (s *Service) httpList(w http.ResponseWriter, r *http.Request) {
	var statuses []Status
	if v := r.URL.Query().Get("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			switch Status(st) {
			case StatusPending, StatusClaimed, StatusCompleted, StatusFailed, StatusExpired:
				statuses = append(statuses, Status(st))
			default:
				writeError(w, http.StatusBadRequest, "bad_status", "unknown status "+strconv.Quote(st))
				return
			}
		}
	}
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "bad_limit", "limit must be 1..10000")
			return
		}
		limit = n
	}
	list, err := s.ListCallbacks(r.Context(), limit, statuses...)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]Callback, len(list))
	for i, c := range list {
		out[i] = RedactedCallback(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"callbacks": out})
}

func (s *Service) httpClaim(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Operator string `json:"operator"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.Operator == "" || len(req.Operator) > maxAgentID {
		writeError(w, http.StatusBadRequest, "bad_operator", "operator required (1-128 bytes)")
		return
	}
	c, err := s.ClaimCallback(r.Context(), req.Operator)
	switch {
	case errors.Is(err, ErrNoneWaiting):
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrSlotsBusy):
		writeError(w, http.StatusConflict, "slots_busy", err.Error())
	case errors.Is(err, ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "closed", err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"callback": c})
	}
}

func (s *Service) httpFinish(w http.ResponseWriter, r *http.Request, to Status) {
	var req struct {
		Attempt int    `json:"attempt"`
		Note    string `json:"note"`
		Reason  string `json:"reason"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	note := req.Note
	if to == StatusFailed {
		note = req.Reason
	}
	c, err := s.FinishCallback(r.Context(), r.PathValue("ticket"), req.Attempt, to, note)
	switch {
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotLive):
		writeError(w, http.StatusConflict, "lease_lost", err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"callback": RedactedCallback(c)})
	}
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_big", "body over 4096 bytes")
		return false
	}
	if len(b) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
