// written by the differ work
