package config

// Nearest is the name in names closest to given by edit distance, when it
// is close enough to be a typo (at most a third of its letters, and at
// least one, differ), else "": the first of equally close names wins, so
// callers pass names in a fixed order. config.toml's keys and the command
// line's flags and commands are checked with it.
func Nearest(given string, names []string) string {
	best, bestDist := "", max(1, len(given)/3)+1
	for _, n := range names {
		if d := editDistance(given, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counting a swap of
// two neighbours as one edit (the commonest typo: "chta").
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
