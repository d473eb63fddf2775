package app

// GlobSteps is Glob with the number of steps it took.
var GlobSteps = glob

// OnRecorded has d call f after each batch of attempts it recorded (or
// failed to); set before Run.
func OnRecorded(d *Dispatcher, f func()) { d.onRecorded = f }
