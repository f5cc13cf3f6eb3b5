package report

import "strconv"

// Plural is "1 call" or "3 calls": n and the noun in the number n needs.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Verb is the verb form for a subject of n things: Verb(1, "does", "do").
func Verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
