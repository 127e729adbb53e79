package wire

// The note kinds of the owner's admin socket (DESIGN.md section 12): brokerd
// keeps a label for each file under memory/ that a tool call created or
// changed, and the owner lists them, reads a note with its label, and
// endorses one (lowers its label). Paths are relative to memory/; brokerd,
// not the codec, checks that each is clean and stays inside.

// NoteLabel is what brokerd remembers of the call that last wrote a file:
// the writing session's taint and untrusted flag at that call, the session
// and call, the SHA-256 of what it left and when. A label never falls by
// itself; Endorsed names the owner's endorsement when one lowered it.
type NoteLabel struct {
	Class     DataClass `json:"class"`
	Untrusted bool      `json:"untrusted"`
	Session   SessionID `json:"session"`
	Call      CallID    `json:"call"`
	// SHA256 is the content the call left, or null for a folder's label:
	// one brokerd keeps when it could not walk a folder a call wrote in
	// (too many files or too deep), which covers everything below it.
	SHA256   *Hash32      `json:"sha256"`
	Time     Timestamp    `json:"time"`
	Endorsed *Endorsement `json:"endorsed"`
}

// Endorsement is the owner's lowering of a label.
type Endorsement struct {
	By   string    `json:"by"` // local:<user>, as approvals name the owner
	Time Timestamp `json:"time"`
}

// NoteEntry is one file (or, with Folder, one folder label) under memory/.
// A nil Label is a file nobody labelled: the owner's, read with the labels
// of the grant that reads it.
type NoteEntry struct {
	Path   string     `json:"path"`
	Folder bool       `json:"folder"`
	Label  *NoteLabel `json:"label"`
}

// NotesList asks for every file under memory/ with its label, and every
// folder label.
type NotesList struct{}

// NotesListPart carries some of the entries (final false); the answer may
// not fit one frame.
type NotesListPart struct {
	Notes []NoteEntry `json:"notes"`
}

// NotesListResult carries the last entries and ends the answer.
type NotesListResult struct {
	Notes []NoteEntry `json:"notes"`
}

// NotesShow asks for one file's content and label.
type NotesShow struct {
	Path string `json:"path"`
}

// NotesShowResult is the file's content (cut at a size brokerd chooses,
// invalid UTF-8 replaced) and the label it is read with: its own, or the
// label of the folder LabelPath names; LabelPath is "" when it has none.
type NotesShowResult struct {
	Path      string     `json:"path"`
	Content   string     `json:"content"`
	Truncated bool       `json:"truncated"`
	LabelPath string     `json:"label_path"`
	Label     *NoteLabel `json:"label"`
}

// NotesEndorse lowers a label: Class (when not null) becomes its class,
// Trusted clears its untrusted flag; each changes only its own half, and
// neither may raise it.
type NotesEndorse struct {
	Path    string     `json:"path"`
	Class   *DataClass `json:"class"`
	Trusted bool       `json:"trusted"`
}

// NotesEndorseResult is the label before and after, once the endorsement
// is in the audit log and the new label is durable.
type NotesEndorseResult struct {
	Path   string    `json:"path"`
	Before NoteLabel `json:"before"`
	After  NoteLabel `json:"after"`
}

// NotesRefused answers a notes request brokerd will not or cannot do: the
// path leaves memory/, names no file, has no label to lower, the
// endorsement would raise it, or memory/ is too large to list.
type NotesRefused struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (NotesList) isMessage()          {}
func (NotesListPart) isMessage()      {}
func (NotesListResult) isMessage()    {}
func (NotesShow) isMessage()          {}
func (NotesShowResult) isMessage()    {}
func (NotesEndorse) isMessage()       {}
func (NotesEndorseResult) isMessage() {}
func (NotesRefused) isMessage()       {}
