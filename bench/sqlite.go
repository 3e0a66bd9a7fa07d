//go:build unix

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// sqlitePath is the database the sqlite kind uses instead of the state file.
func sqlitePath(state string) string { return strings.TrimSuffix(state, ".json") + ".db" }

// sqliteDSN opens path with the settings every connection needs: a busy
// timeout of 5 minutes (the statelock kinds wait as long), WAL and
// synchronous=FULL (see kindSQLite for why these).
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(300000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
}

// sqliteSetup makes the database with its one row, before the workers
// start, so that no run times the schema or the switch to WAL.
func sqliteSetup(path string) error {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("%s: journal_mode is %q, not wal", path, mode)
	}
	_, err = db.Exec("CREATE TABLE counter (id INTEGER PRIMARY KEY, doc BLOB NOT NULL); INSERT INTO counter VALUES (1, x'')")
	return err
}

// sqliteRead returns the row's document, for the count check.
func sqliteRead(path string) ([]byte, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var doc []byte
	err = db.QueryRow("SELECT doc FROM counter WHERE id = 1").Scan(&doc)
	return doc, err
}

// sqliteIncrementer is one increment as a SQLite user writes it: BEGIN
// IMMEDIATE (the write lock, waited for by the busy handler), read the
// row, step, write it back, COMMIT (durable: WAL fsync). One connection
// per incrementer, kept open, as an application keeps its database open.
func sqliteIncrementer(path string) (func(step func([]byte) ([]byte, error)) error, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		return nil, fmt.Errorf("%s: synchronous is %d, not FULL (2): %v", path, sync, err)
	}
	return func(step func([]byte) ([]byte, error)) (err error) {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
					err = errors.Join(err, rerr)
				}
			}
		}()
		var old []byte
		if err := conn.QueryRowContext(ctx, "SELECT doc FROM counter WHERE id = 1").Scan(&old); err != nil {
			return err
		}
		next, err := step(old)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "UPDATE counter SET doc = ? WHERE id = 1", next); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, "COMMIT")
		return err
	}, nil
}
