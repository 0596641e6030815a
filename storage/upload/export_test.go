package upload

import (
	"context"
	"errors"
	"time"
)

// What the external tests (iceberg_test.go, which imports storage/iceberg,
// which imports this package) drive an uploader with.

func (u *Uploader) PassForTest(ctx context.Context) error {
	_, err := u.pass(ctx)
	return err
}

func (u *Uploader) LoadForTest(store Partitions, now func() time.Time, hook func(string) error) error {
	u.now, u.hook = now, hook
	return u.load(store)
}

// IsCrash says whether err is a crash a test's hook injected.
func IsCrash(err error) bool { return errors.As(err, new(crash)) }
