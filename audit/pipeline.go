package audit

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// Verifying reads, parses and hashes every byte of the log, which one core
// does at about half the speed the disk's page cache gives. The chain checks
// are cheap but must go in order; parsing and hashing a line need nothing
// from the lines before it. So one goroutine reads the day files in chunks
// of whole lines, workers on the other cores parse and hash the chunks'
// lines, and chainScan checks them in order as each chunk is done. Memory
// stays bounded: at most inFlight chunks exist at once, each at most
// chunkBytes+MaxLine+1 bytes, whatever the log's size.

// chunkBytes is how much a chunk holds before it is cut at a newline.
const chunkBytes = 1 << 20

// chunk is a run of whole lines from one day file.
type chunk struct {
	file    int    // the index of its day file
	buf     []byte // the buffer data lies in, reused once the chunk is checked
	data    []byte // whole lines; the last lacks its newline when tail is set
	tail    bool   // data ends with the file's last line, which has no newline
	end     bool   // the file's last chunk
	tooLong bool   // after data, a line runs on past MaxLine without a newline
	err     error  // reading failed after data
	openErr error  // the file could not be opened; there is no data
	lines   []parsedLine
	parsed  chan struct{} // closed once lines is filled
}

// parsedLine is what a worker found in one line of a chunk.
type parsedLine struct {
	start, end int // the line in chunk.data, without its newline
	long       bool
	e          entry
	perr       error
	sum        [32]byte  // set when perr is nil
	leaf       tlog.Hash // the line's leaf hash, when the pipeline computes them
}

// pipeline carries chunks from the reader through the workers to the
// checker, in order.
type pipeline struct {
	target  int   // chunkBytes, smaller in tests
	from    int64 // where reading starts in the first file
	leaves  bool  // the workers compute each line's leaf hash too
	ordered chan *chunk
	work    chan *chunk
	free    chan *chunk // checked chunks, whose buffers are reused
	stop    chan struct{}
	wg      sync.WaitGroup
}

// startPipeline starts reading files of dir with workers parsing; workers
// is GOMAXPROCS when zero; reading starts at offset from in the first file.
// The caller takes chunks from ordered and must call finish.
func startPipeline(dir string, files []dayFile, from int64, target, workers int, leaves bool) *pipeline {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	inFlight := 2*workers + 1
	p := &pipeline{
		target:  target,
		from:    from,
		leaves:  leaves,
		ordered: make(chan *chunk, inFlight),
		work:    make(chan *chunk, inFlight+1),
		free:    make(chan *chunk, inFlight+2),
		stop:    make(chan struct{}),
	}
	p.wg.Go(func() { p.read(dir, files) })
	for range workers {
		p.wg.Go(p.parse)
	}
	return p
}

// finish stops the reader and workers early if they are still going, and
// waits for them.
func (p *pipeline) finish() {
	close(p.stop)
	p.wg.Wait()
}

// done hands a checked chunk back, for its buffers to be reused.
func (p *pipeline) done(c *chunk) {
	select {
	case p.free <- c:
	default:
	}
}

// parse is a worker: it parses and hashes each line of each chunk it takes.
func (p *pipeline) parse() {
	for c := range p.work {
		c.lines = splitLines(c.data, c.lines)
		for i := range c.lines {
			l := &c.lines[i]
			if l.long = l.end-l.start > MaxLine; l.long {
				break // the checker stops there
			}
			b := c.data[l.start:l.end]
			if l.e, l.perr = parseEntry(b); l.perr == nil {
				l.sum = sha256.Sum256(b)
				if p.leaves {
					l.leaf = tlog.RecordHash(b)
				}
			}
		}
		close(c.parsed)
	}
}

// splitLines appends the lines of data, each without its newline; a last
// line without a newline counts too.
func splitLines(data []byte, lines []parsedLine) []parsedLine {
	for start := 0; start < len(data); {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			return append(lines, parsedLine{start: start, end: len(data)})
		}
		lines = append(lines, parsedLine{start: start, end: start + end})
		start += end + 1
	}
	return lines
}

// read sends every file's chunks, in order, to the checker and the workers.
func (p *pipeline) read(dir string, files []dayFile) {
	defer close(p.work)
	defer close(p.ordered)
	for i, f := range files {
		if !p.readFile(i, filepath.Join(dir, f.name)) {
			return
		}
	}
}

// readFile sends one file's chunks; it returns false when told to stop.
func (p *pipeline) readFile(i int, path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return p.send(&chunk{file: i, openErr: err, end: true})
	}
	defer fh.Close()
	if i == 0 && p.from > 0 {
		if _, err := fh.Seek(p.from, io.SeekStart); err != nil {
			return p.send(&chunk{file: i, openErr: err, end: true})
		}
	}
	var carry []byte // the start of a line the last chunk cut off
	for {
		c := p.chunk(i)
		data, err := p.fill(fh, append(c.buf[:0], carry...))
		cut := bytes.LastIndexByte(data, '\n') + 1
		switch {
		case errors.Is(err, io.EOF):
			c.end, c.tail, cut = true, cut < len(data), len(data)
		case err != nil:
			c.end, c.err = true, err
		case cut == 0:
			c.end, c.tooLong = true, true // the buffer is full and holds no newline
		default:
			carry = append(carry[:0], data[cut:]...)
		}
		c.data = data[:cut]
		if !p.send(c) {
			return false
		}
		if c.end {
			return c.err == nil && !c.tooLong // after a failure the checker stops
		}
	}
}

// fill reads into data until it holds at least target bytes and a newline
// after them, or is full, or reading fails (io.EOF at the end).
func (p *pipeline) fill(r io.Reader, data []byte) ([]byte, error) {
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) || len(data) >= p.target && bytes.IndexByte(data[len(data)-n:], '\n') >= 0 {
			return data, nil
		}
	}
}

// chunk returns an empty chunk of file i, reusing the buffers of a checked
// one when there is one.
func (p *pipeline) chunk(i int) *chunk {
	select {
	case old := <-p.free:
		return &chunk{file: i, buf: old.buf, lines: old.lines[:0]}
	default:
		return &chunk{file: i, buf: make([]byte, 0, p.target+MaxLine+1)}
	}
}

// send hands c to the checker and to a worker, unless told to stop.
func (p *pipeline) send(c *chunk) bool {
	c.parsed = make(chan struct{})
	select {
	case p.ordered <- c:
	case <-p.stop:
		return false
	}
	select {
	case p.work <- c:
		return true
	case <-p.stop:
		return false
	}
}
