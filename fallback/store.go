package fallback

import (
	"context"

	"github.com/frontdoorhq/frontdoor/fallback/callbackstore"
)

// The callback record and its store are package fallback/callbackstore's.
// Their names are kept here as aliases, as os keeps fs.FileMode, so that a
// caller of the Service names one package.
type (
	Status        = callbackstore.Status
	Callback      = callbackstore.Callback
	CallbackStore = callbackstore.Store
	SQLiteStore   = callbackstore.SQLite
)

// Callback states (callbackstore's).
const (
	StatusPending   = callbackstore.StatusPending
	StatusClaimed   = callbackstore.StatusClaimed
	StatusCompleted = callbackstore.StatusCompleted
	StatusFailed    = callbackstore.StatusFailed
	StatusExpired   = callbackstore.StatusExpired
)

// DatabaseFile is the callback database's name inside the data directory.
const DatabaseFile = callbackstore.DatabaseFile

// Store errors (callbackstore's).
var (
	ErrNotFound  = callbackstore.ErrNotFound
	ErrNotLive   = callbackstore.ErrNotLive
	ErrLeaseLost = callbackstore.ErrLeaseLost
	ErrQueueFull = callbackstore.ErrQueueFull
)

// OpenSQLite opens (creating if needed) the callback database in dir: the
// default CallbackStore (callbackstore.OpenSQLite).
func OpenSQLite(ctx context.Context, dir string) (*SQLiteStore, error) {
	return callbackstore.OpenSQLite(ctx, dir)
}
