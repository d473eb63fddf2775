// Access requests: how hookbox user, token and passwd hand a running
// server on a bbolt file (which holds the file) a change of users or
// tokens. Each request is a file of its own in the data directory, with a
// random name so two commands never clobber each other; the server applies
// it through Service (which audits it) and leaves an answer beside it. As
// with the passwd.request of earlier versions, the file system authenticates the caller: the
// server takes only a regular file of its own user, mode 0600, small,
// opened without following a link. A request never carries a password or
// a token's secret: only a bcrypt hash, or a token's SHA-256.

package access

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"hookbox/app"
	"hookbox/app/datadir"
)

// The operations of an access request.
const (
	OpUserAdd    = "user.add"
	OpUserRemove = "user.remove"
	OpUserRole   = "user.role"
	OpUserPasswd = "user.passwd"
	OpUserList   = "user.list"
	OpTokenAdd   = "token.add"
	OpTokenList  = "token.list"
	OpTokenRevok = "token.revoke"
)

// Request is one change (or listing) asked of the running server.
type Request struct {
	Op   string `json:"op"`
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
	// Hash is a user's new password's bcrypt hash.
	Hash string `json:"hash,omitempty"`
	// TokenHash is the hex SHA-256 of a new token's secret.
	TokenHash string `json:"token_hash,omitempty"`
	// TTLSeconds is a new token's life (0: never expires).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Actor is who runs the command: "local:" and a Unix user name.
	Actor string `json:"actor"`
}

// Answer is the server's answer to an Request.
type Answer struct {
	OK     bool          `json:"ok"`
	Error  string        `json:"error,omitempty"`
	Users  []ListedUser  `json:"users,omitempty"`
	Tokens []ListedToken `json:"tokens,omitempty"`
}

// ListedUser is a user as listed (no hash).
type ListedUser struct {
	Name             string    `json:"name"`
	Role             string    `json:"role"`
	Created          time.Time `json:"created,omitzero"`
	Changed          time.Time `json:"changed,omitzero"`
	PasswordInConfig bool      `json:"password_in_config,omitempty"`
}

// ListedToken is a token as listed (no hash).
type ListedToken struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Created   time.Time `json:"created,omitzero"`
	CreatedBy string    `json:"created_by,omitempty"`
	LastUsed  time.Time `json:"last_used,omitzero"`
	Expires   time.Time `json:"expires,omitzero"`
}

// ListUsers is a's users as listed.
func (a *Service) ListUsers() []ListedUser {
	var out []ListedUser
	for _, u := range a.Users() {
		out = append(out, ListedUser{Name: u.Name, Role: u.Role.String(), Created: u.Created, Changed: u.Changed,
			PasswordInConfig: a.PasswordInConfig(u.Name)})
	}
	return out
}

// ListTokens is a's tokens as listed.
func (a *Service) ListTokens() []ListedToken {
	var out []ListedToken
	for _, t := range a.Tokens() {
		out = append(out, ListedToken{Name: t.Name, Role: t.Role.String(), Created: t.Created, CreatedBy: t.CreatedBy,
			LastUsed: t.LastUsed, Expires: t.Expires})
	}
	return out
}

const (
	accessRequestPrefix = "access-"
	accessRequestSuffix = ".request"
	accessAnswerSuffix  = ".answer"
	// maxAccessRequestSize bounds a request file: a few names and hashes.
	maxAccessRequestSize = 4096
	// maxAccessAnswerSize bounds an answer: a listing of many users.
	maxAccessAnswerSize = 4 << 20
)

var accessRequestName = regexp.MustCompile(`^access-[0-9a-f]{32}\.request$`)

// WriteRequest leaves r for the server running on dataDir and
// returns the request's id, for WaitAnswer. It is written whole,
// synced, then renamed into place (package datadir: the service user's
// file, 0600, even when root runs it).
func WriteRequest(dataDir string, r Request) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	if len(b) > maxAccessRequestSize {
		return "", errors.New("the request is too long")
	}
	var idb [16]byte
	rand.Read(idb[:])
	id := hex.EncodeToString(idb[:])
	d, err := datadir.Open(dataDir)
	if err != nil {
		return "", fmt.Errorf("write the request: %w", err)
	}
	defer d.Close()
	f, err := d.NewFile(".access.tmp-*", 0o600)
	if err != nil {
		return "", fmt.Errorf("write the request: %w", err)
	}
	defer f.Discard()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Publish(accessRequestPrefix + id + accessRequestSuffix)
	}
	if err != nil {
		return "", fmt.Errorf("write the request in %s: %w", dataDir, err)
	}
	return id, nil
}

// WaitAnswer waits for the server's answer to the request id in
// dataDir, reads it (bounded, without following a link) and removes it;
// when ctx ends first, the request is withdrawn unless taken meanwhile.
func WaitAnswer(ctx context.Context, dataDir, id string) (Answer, error) {
	req := filepath.Join(dataDir, accessRequestPrefix+id+accessRequestSuffix)
	ans := filepath.Join(dataDir, accessRequestPrefix+id+accessAnswerSuffix)
	for {
		b, err := readBounded(ans, maxAccessAnswerSize, dirOwner(dataDir))
		if err == nil {
			os.Remove(ans)
			var a Answer
			if err := json.Unmarshal(b, &a); err != nil {
				return Answer{}, fmt.Errorf("the server's answer %s: %w", ans, err)
			}
			return a, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return Answer{}, err
		}
		select {
		case <-ctx.Done():
			if os.Remove(req) != nil {
				return Answer{}, errors.New("the server took the request but gave no answer in time: see its log")
			}
			return Answer{}, errors.New("the server did not take the request: is it running on this data directory? Nothing was changed")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// dirOwner is the uid of dir's owner (-1: unknown): the server's user,
// whose answers root reads.
func dirOwner(dir string) int {
	d, err := datadir.Open(dir)
	if err != nil {
		return -1
	}
	defer d.Close()
	uid, _ := d.Owner()
	return uid
}

// readBounded reads the regular file at path, not following a link nor
// waiting on a FIFO, refusing one that others may read or write, that is
// longer than max, or that belongs to another user than this process's or
// also (>= 0).
func readBounded(path string, max int64, also int) ([]byte, error) {
	f, err := datadir.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s has mode %04o: others may read or write it (want 0600)", path, fi.Mode().Perm())
	case !ownedByMe(fi) && (also < 0 || ownerOf(fi) != also):
		return nil, fmt.Errorf("%s belongs to another user than this one", path)
	case fi.Size() > max:
		return nil, fmt.Errorf("%s is too long (%d bytes)", path, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is too long", path)
	}
	return b, nil
}

// TakeRequests applies every access request waiting in dataDir
// through a and answers each; a request it cannot read is answered with
// why and logged.
func (a *Service) TakeRequests(ctx context.Context, dataDir string) {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !accessRequestName.MatchString(e.Name()) {
			continue
		}
		id := strings.TrimSuffix(strings.TrimPrefix(e.Name(), accessRequestPrefix), accessRequestSuffix)
		var ans Answer
		b, err := readBounded(filepath.Join(dataDir, e.Name()), maxAccessRequestSize, -1)
		var r Request
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			a.Logger.Warn("access request refused", "file", e.Name(), slog.Any("error", err))
			ans.Error = "the server refused the request (its log says why): run the command as the user hookbox runs as, or as root"
		} else {
			ans = a.Apply(ctx, r)
		}
		if err := writeAccessAnswer(dataDir, id, ans); err != nil {
			a.Logger.Error("access answer not written", "file", e.Name(), slog.Any("error", err))
		}
		os.Remove(filepath.Join(dataDir, e.Name()))
	}
}

func writeAccessAnswer(dataDir, id string, ans Answer) error {
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	d, err := datadir.Open(dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.NewFile(".access.tmp-*", 0o600)
	if err != nil {
		return err
	}
	defer f.Discard()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Publish(accessRequestPrefix + id + accessAnswerSuffix)
}

// Apply does r through a, audited with r's actor via the command line
// from the box itself, and answers it.
func (a *Service) Apply(ctx context.Context, r Request) Answer {
	if !strings.HasPrefix(r.Actor, "local:") || len(r.Actor) > 6+app.MaxAccessName {
		return Answer{Error: "the request names no local user"}
	}
	who := app.Who{Actor: r.Actor, Via: "cli", From: "local"}
	var err error
	switch r.Op {
	case OpUserList:
		return Answer{OK: true, Users: a.ListUsers()}
	case OpTokenList:
		return Answer{OK: true, Tokens: a.ListTokens()}
	case OpUserAdd, OpUserRole:
		var role app.Role
		if role, err = app.ParseRole(r.Role); err == nil {
			if r.Op == OpUserAdd {
				err = a.AddUser(ctx, who, r.Name, role, []byte(r.Hash))
			} else {
				err = a.SetRole(ctx, who, r.Name, role)
			}
		}
	case OpUserRemove:
		err = a.RemoveUser(ctx, who, r.Name)
	case OpUserPasswd:
		err = a.SetPassword(ctx, who, r.Name, []byte(r.Hash))
	case OpTokenAdd:
		var role app.Role
		var h []byte
		if role, err = app.ParseRole(r.Role); err == nil {
			if h, err = hex.DecodeString(r.TokenHash); err == nil && len(h) != 32 {
				err = errors.New("the token's hash is not a SHA-256")
			}
		}
		if err == nil {
			err = a.AddToken(ctx, who, r.Name, role, [32]byte(h), time.Duration(r.TTLSeconds)*time.Second)
		}
	case OpTokenRevok:
		err = a.RevokeToken(ctx, who, r.Name)
	default:
		return Answer{Error: fmt.Sprintf("unknown operation %q", r.Op)}
	}
	if err != nil {
		msg := app.ErrorMessage(err)
		if app.ErrorCode(err) == app.EINTERNAL {
			a.Logger.Error("access request failed", "op", r.Op, slog.Any("error", err))
			msg = "internal error (see the server's log)"
		}
		return Answer{Error: msg}
	}
	return Answer{OK: true}
}
