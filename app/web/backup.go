package web

import (
	"net"
	"os"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
)

// BackupIdleTimeout bounds how long a backup download may go without
// taking the next chunk. It replaces the server's WriteTimeout for that
// route: a copy of hundreds of MB takes longer than 10 s to read, and was
// cut there.
const BackupIdleTimeout = 30 * time.Second

// backupIdle is BackupIdleTimeout; tests shorten it.
var backupIdle = BackupIdleTimeout

// pacedBackup is the body of a backup download: each read from the copy
// gives the connection a new write deadline, so a download lasts as long
// as it moves, and a reader that stops is cut after backupIdle. What is
// not read yet stays in the file, not in memory.
type pacedBackup struct {
	f    *os.File
	conn net.Conn
	idle time.Duration
}

func (p *pacedBackup) Read(b []byte) (int, error) {
	if err := p.conn.SetWriteDeadline(time.Now().Add(p.idle)); err != nil {
		return 0, err
	}
	return p.f.Read(b)
}

// Close is called by fasthttp when the answer is sent or abandoned.
func (p *pacedBackup) Close() error { return p.f.Close() }

// handleBackup streams a hot copy of the data file. The copy is made into
// an unlinked temp file first, so the read transaction is short and the
// response is not held in memory.
func (s *Server) handleBackup(c *fiber.Ctx) error {
	if s.deps.Backup == nil {
		return s.sendError(c, app.Errorf(app.ENOTFOUND, "backup not available"))
	}
	f, size, err := s.deps.Backup()
	if err != nil {
		return s.storeError(c, err)
	}
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="hookbox-`+s.deps.Now().UTC().Format("20060102-150405")+`.db"`)
	c.Response().SetBodyStream(&pacedBackup{f: f, conn: c.Context().Conn(), idle: backupIdle}, int(size)) // fasthttp closes it when sent
	return nil
}
