package audit

import (
	"errors"
	"fmt"
	"os"
	"time"

	"boxmaker/wire"
)

// lockName is the writer's lock file in the log's directory.
const lockName = ".lock"

const msPerDay = 24 * 60 * 60 * 1000

// dayFile is one YYYY-MM-DD.jsonl file of the log; day counts days since 1970-01-01 UTC.
type dayFile struct {
	name string
	day  int64
}

// listDayFiles returns the log's files in date order. Anything in dir but the
// day files and the lock file is an error: the directory is brokerd's alone,
// and a stray file there (a copy, an editor's backup, a file the writer never
// made) is something the owner should look at, not something to skip.
func listDayFiles(dir string) ([]dayFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	var files []dayFile
	for _, e := range entries {
		if (e.Name() == lockName || e.Name() == CheckpointsName || e.Name() == VerifierKeyName || e.Name() == TreeName) && e.Type().IsRegular() {
			continue
		}
		day, ok := parseDayName(e.Name())
		if !ok {
			return nil, &VerifyError{File: e.Name(), Err: errors.New("unexpected file: the log holds only YYYY-MM-DD.jsonl files, .lock, " + CheckpointsName + ", " + VerifierKeyName + " and " + TreeName)}
		}
		if !e.Type().IsRegular() {
			return nil, &VerifyError{File: e.Name(), Err: errors.New("not a regular file")}
		}
		files = append(files, dayFile{name: e.Name(), day: day})
	}
	return files, nil // os.ReadDir sorts by name, which for these names is date order
}

// parseDayName reads "YYYY-MM-DD.jsonl", a date from 1970 to 9999.
func parseDayName(name string) (int64, bool) {
	const layout = "2006-01-02"
	if len(name) != len(layout)+len(".jsonl") || name[len(layout):] != ".jsonl" {
		return 0, false
	}
	t, err := time.Parse(layout, name[:len(layout)])
	if err != nil || t.Format(layout) != name[:len(layout)] || t.Year() < 1970 {
		return 0, false
	}
	return t.Unix() / (24 * 60 * 60), true
}

func dayName(day int64) string {
	return time.UnixMilli(day*msPerDay).UTC().Format("2006-01-02") + ".jsonl"
}

func dayOf(ts wire.Timestamp) int64 { return int64(ts / msPerDay) }
