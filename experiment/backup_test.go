package experiment

import (
	"strings"
	"testing"
)

const backupFile = `name = "backup"
[[path]]
rtt = "20ms"
[[path]]
rtt = "40ms"
backup = true
[[source]]
kind = "bulk"
`

func TestBackupPath(t *testing.T) {
	runs, err := Parse("b.toml", []byte(backupFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	if e.Paths[0].Backup || !e.Paths[1].Backup {
		t.Fatalf("backup flags %v, %v; want false, true", e.Paths[0].Backup, e.Paths[1].Backup)
	}
	checkRoundTrip(t, e)
	_, err = Parse("b.toml", []byte(strings.Replace(backupFile, "backup = true", `backup = "yes"`, 1)), nil)
	if err == nil || !strings.Contains(err.Error(), "b.toml:6: path.1.backup") {
		t.Fatalf("bad backup value: error %v, want one naming b.toml:6: path.1.backup", err)
	}
}
