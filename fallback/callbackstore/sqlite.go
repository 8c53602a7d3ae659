package callbackstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DatabaseFile is the callback database's name inside the data directory.
const DatabaseFile = "callbacks.db"

// SQLite is the default Store: one SQLite file in WAL mode
// with synchronous=FULL, so a write that returned survives kill -9 and
// power loss of the process. Several processes may open the same file
// (the server and the `frontdoor callbacks` command): every change is one
// conditional statement, so two claims of one callback cannot both win.
type SQLite struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS callbacks (
	ticket      TEXT PRIMARY KEY,
	call        TEXT NOT NULL,
	turn        TEXT NOT NULL,
	number      TEXT NOT NULL,
	status      TEXT NOT NULL,
	accepted    INTEGER NOT NULL,
	attempt     INTEGER NOT NULL DEFAULT 0,
	operator    TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	updated     INTEGER NOT NULL,
	note        TEXT NOT NULL DEFAULT '',
	tenant      TEXT NOT NULL DEFAULT '',
	UNIQUE (call, turn)
);
CREATE INDEX IF NOT EXISTS callbacks_status ON callbacks (status, accepted);
`

// OpenSQLite opens (creating if needed) the callback database in dir.
func OpenSQLite(ctx context.Context, dir string) (*SQLite, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("fallback: data dir: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dir, DatabaseFile))
	if err != nil {
		return nil, fmt.Errorf("fallback: data dir: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("fallback: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("fallback: schema %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("fallback: schema %s: %w", path, err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("fallback: %s: journal_mode %q, want wal: %v", path, mode, err)
	}
	return &SQLite{db: db}, nil
}

// migrate adds the columns a database made by an older server lacks.
func migrate(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('callbacks') WHERE name = 'tenant'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `ALTER TABLE callbacks ADD COLUMN tenant TEXT NOT NULL DEFAULT ''`)
	return err
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

const columns = `ticket, call, turn, number, status, accepted, attempt, operator, lease_until, updated, note, tenant`

type scanner interface{ Scan(...any) error }

func scanCallback(r scanner) (Callback, error) {
	var c Callback
	var status string
	var accepted, lease, updated int64
	if err := r.Scan(&c.Ref, &c.Call, &c.Turn, &c.Number, &status, &accepted, &c.Attempt, &c.Operator, &lease, &updated, &c.Note, &c.Tenant); err != nil {
		return Callback{}, err
	}
	c.Status = Status(status)
	c.Accepted = time.Unix(0, accepted)
	if lease != 0 {
		c.LeaseUntil = time.Unix(0, lease)
	}
	c.Updated = time.Unix(0, updated)
	return c, nil
}

// Accept implements Store.
func (s *SQLite) Accept(ctx context.Context, c Callback) (Callback, bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO callbacks (ticket, call, turn, number, status, accepted, updated, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (call, turn) DO NOTHING`,
		c.Ref, c.Call, c.Turn, c.Number, string(StatusPending), c.Accepted.UnixNano(), c.Accepted.UnixNano(), c.Tenant)
	if err != nil {
		return Callback{}, false, fmt.Errorf("fallback: accept callback: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Callback{}, false, fmt.Errorf("fallback: accept callback: %w", err)
	}
	got, err := scanCallback(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM callbacks WHERE call = ? AND turn = ?`, c.Call, c.Turn))
	if err != nil {
		return Callback{}, false, fmt.Errorf("fallback: accept callback: read back: %w", err)
	}
	return got, n == 1, nil
}

// Find implements Store.
func (s *SQLite) Find(ctx context.Context, call, turn string) (Callback, bool, error) {
	c, err := scanCallback(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM callbacks WHERE call = ? AND turn = ?`, call, turn))
	if errors.Is(err, sql.ErrNoRows) {
		return Callback{}, false, nil
	}
	if err != nil {
		return Callback{}, false, fmt.Errorf("fallback: find callback: %w", err)
	}
	return c, true, nil
}

// Get implements Store.
func (s *SQLite) Get(ctx context.Context, ref string) (Callback, error) {
	c, err := scanCallback(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM callbacks WHERE ticket = ?`, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return Callback{}, fmt.Errorf("%w: %q", ErrNotFound, ref)
	}
	if err != nil {
		return Callback{}, fmt.Errorf("fallback: get callback: %w", err)
	}
	return c, nil
}

// List implements Store.
func (s *SQLite) List(ctx context.Context, limit int, statuses ...Status) ([]Callback, error) {
	q := `SELECT ` + columns + ` FROM callbacks`
	var args []any
	if len(statuses) > 0 {
		q += ` WHERE status IN (?` + strings.Repeat(`, ?`, len(statuses)-1) + `)`
		for _, st := range statuses {
			args = append(args, string(st))
		}
	}
	q += ` ORDER BY accepted, rowid`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("fallback: list callbacks: %w", err)
	}
	defer rows.Close()
	var out []Callback
	for rows.Next() {
		c, err := scanCallback(rows)
		if err != nil {
			return nil, fmt.Errorf("fallback: list callbacks: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fallback: list callbacks: %w", err)
	}
	return out, nil
}

// update runs one conditional UPDATE ... RETURNING and tells a missing
// ticket from one in the wrong state.
func (s *SQLite) update(ctx context.Context, op, ref string, notLive error, q string, args ...any) (Callback, error) {
	c, err := scanCallback(s.db.QueryRowContext(ctx, q+` RETURNING `+columns, args...))
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Callback{}, fmt.Errorf("fallback: %s callback: %w", op, err)
	}
	cur, gerr := s.Get(ctx, ref)
	if gerr != nil {
		return Callback{}, gerr
	}
	return Callback{}, fmt.Errorf("%w: %s %q: status %s, attempt %d", notLive, op, ref, cur.Status, cur.Attempt)
}

// Claim implements Store.
func (s *SQLite) Claim(ctx context.Context, ref, operator string, now, until time.Time) (Callback, error) {
	return s.update(ctx, "claim", ref, ErrNotLive,
		`UPDATE callbacks SET status = ?, attempt = attempt + 1, operator = ?, lease_until = ?, updated = ?
		 WHERE ticket = ? AND status = ?`,
		string(StatusClaimed), operator, until.UnixNano(), now.UnixNano(), ref, string(StatusPending))
}

// Return implements Store.
func (s *SQLite) Return(ctx context.Context, ref string, attempt int, now time.Time) error {
	_, err := s.update(ctx, "return", ref, ErrLeaseLost,
		`UPDATE callbacks SET status = ?, operator = '', lease_until = 0, updated = ?
		 WHERE ticket = ? AND status = ? AND attempt = ?`,
		string(StatusPending), now.UnixNano(), ref, string(StatusClaimed), attempt)
	return err
}

// Finish implements Store.
func (s *SQLite) Finish(ctx context.Context, ref string, attempt int, to Status, note string, now time.Time) (Callback, error) {
	if to != StatusCompleted && to != StatusFailed {
		return Callback{}, fmt.Errorf("fallback: finish %q: bad status %q", ref, to)
	}
	return s.update(ctx, "finish", ref, ErrLeaseLost,
		`UPDATE callbacks SET status = ?, note = ?, lease_until = 0, updated = ?
		 WHERE ticket = ? AND status = ? AND (? = 0 OR attempt = ?)`,
		string(to), note, now.UnixNano(), ref, string(StatusClaimed), attempt, attempt)
}

// Expire implements Store.
func (s *SQLite) Expire(ctx context.Context, ref string, now time.Time) error {
	_, err := s.update(ctx, "expire", ref, ErrNotLive,
		`UPDATE callbacks SET status = ?, updated = ? WHERE ticket = ? AND status = ?`,
		string(StatusExpired), now.UnixNano(), ref, string(StatusPending))
	return err
}
