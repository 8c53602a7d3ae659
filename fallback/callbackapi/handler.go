// Package callbackapi is the operators' HTTP API of the callback queue:
// list, claim, complete and fail callbacks (JSON), on a fallback.Service.
package callbackapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/frontdoorhq/frontdoor/fallback"
)

// Request bounds.
const (
	maxBody     = 4096 // an operator request's body
	maxOperator = 128  // an operator's name
)

// Callbacks is what the API asks of the callback queue; *fallback.Service
// implements it.
type Callbacks interface {
	ListCallbacks(ctx context.Context, limit int, statuses ...fallback.Status) ([]fallback.Callback, error)
	ClaimCallback(ctx context.Context, operator string) (fallback.Callback, error)
	FinishCallback(ctx context.Context, ref string, attempt int, to fallback.Status, note string) (fallback.Callback, error)
}

var _ Callbacks = (*fallback.Service)(nil)

// Handler serves the operators' callback API (JSON) on s:
//
//	GET  /v1/callbacks?status=pending,claimed&limit=100  list, numbers redacted
//	POST /v1/callbacks/claim             {"operator"}         200 {"callback"} with the full number; 204 none waiting; 409 slots busy
//	POST /v1/callbacks/{ticket}/complete {"attempt","note"}   200 {"callback"}
//	POST /v1/callbacks/{ticket}/fail     {"attempt","reason"} 200 {"callback"}
//
// Errors are {"error": {"code", "message"}} with 400, 404 or 409. Mount it
// at /v1/callbacks and /v1/callbacks/ on an operators-only listener or
// behind authentication: a claim reveals a caller's number.
func Handler(s Callbacks) http.Handler {
	a := api{s}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/callbacks", a.list)
	mux.HandleFunc("POST /v1/callbacks/claim", a.claim)
	mux.HandleFunc("POST /v1/callbacks/{ticket}/complete", func(w http.ResponseWriter, r *http.Request) { a.finish(w, r, fallback.StatusCompleted) })
	mux.HandleFunc("POST /v1/callbacks/{ticket}/fail", func(w http.ResponseWriter, r *http.Request) { a.finish(w, r, fallback.StatusFailed) })
	return mux
}

type api struct{ s Callbacks }

func (a api) list(w http.ResponseWriter, r *http.Request) {
	var statuses []fallback.Status
	if v := r.URL.Query().Get("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			switch fallback.Status(st) {
			case fallback.StatusPending, fallback.StatusClaimed, fallback.StatusCompleted, fallback.StatusFailed, fallback.StatusExpired:
				statuses = append(statuses, fallback.Status(st))
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
	list, err := a.s.ListCallbacks(r.Context(), limit, statuses...)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]fallback.Callback, len(list))
	for i, c := range list {
		out[i] = fallback.RedactedCallback(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"callbacks": out})
}

func (a api) claim(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Operator string `json:"operator"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.Operator == "" || len(req.Operator) > maxOperator {
		writeError(w, http.StatusBadRequest, "bad_operator", "operator required (1-128 bytes)")
		return
	}
	c, err := a.s.ClaimCallback(r.Context(), req.Operator)
	switch {
	case errors.Is(err, fallback.ErrNoneWaiting):
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, fallback.ErrSlotsBusy):
		writeError(w, http.StatusConflict, "slots_busy", err.Error())
	case errors.Is(err, fallback.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "closed", err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"callback": c})
	}
}

func (a api) finish(w http.ResponseWriter, r *http.Request, to fallback.Status) {
	var req struct {
		Attempt int    `json:"attempt"`
		Note    string `json:"note"`
		Reason  string `json:"reason"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	note := req.Note
	if to == fallback.StatusFailed {
		note = req.Reason
	}
	c, err := a.s.FinishCallback(r.Context(), r.PathValue("ticket"), req.Attempt, to, note)
	switch {
	case errors.Is(err, fallback.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, fallback.ErrLeaseLost), errors.Is(err, fallback.ErrNotLive):
		writeError(w, http.StatusConflict, "lease_lost", err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "store", err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"callback": fallback.RedactedCallback(c)})
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
