package app

// GlobSteps is Glob with the number of steps it took.
var GlobSteps = glob
