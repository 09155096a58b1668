package tier1api_test

import (
	"encoding/base64"
	"io"
	"log/slog"
)

func newJSONLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func base64URL(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
