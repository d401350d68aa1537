package main

import (
	"embed"
	"strings"
)

// The long help of the commands with the most to say, one text file each.
//
//go:embed help/*.txt
var helpFiles embed.FS

// help is the text of help/NAME.txt.
func help(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err) // a missing help file is a build mistake
	}
	return strings.TrimRight(string(b), "\n")
}
