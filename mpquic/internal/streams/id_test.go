package streams

import "testing"

func TestStreamID(t *testing.T) {
	tests := []struct {
		index           uint64
		bidi, client    bool
		id              uint64
		wantBidi, wantC bool
	}{
		{0, true, true, 0, true, true},
		{0, true, false, 1, true, false},
		{0, false, true, 2, false, true},
		{0, false, false, 3, false, false},
		{1, true, true, 4, true, true},
		{5, false, false, 23, false, false},
		{1 << 60, true, false, 1<<62 | 1, true, false},
	}
	for _, tt := range tests {
		id := StreamID(tt.index, tt.bidi, tt.client)
		if id != tt.id {
			t.Errorf("StreamID(%d, %v, %v) = %d, want %d", tt.index, tt.bidi, tt.client, id, tt.id)
		}
		if IsBidi(id) != tt.wantBidi || IsClientInitiated(id) != tt.wantC || Index(id) != tt.index {
			t.Errorf("id %d: IsBidi %v IsClientInitiated %v Index %d", id, IsBidi(id), IsClientInitiated(id), Index(id))
		}
	}
}
