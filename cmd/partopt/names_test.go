package main

import "github.com/partopt/partopt/job"

// The names the CLI tests use for what moved to package job.
const (
	labelsFile             = job.LabelsFile
	optimalFile            = job.OptimalFile
	reportFile             = job.ReportFile
	persistentFile         = job.PersistentFile
	certificateFile        = job.CertificateFile
	labelTilesFile         = job.LabelTilesFile
	persistentTilesFile    = job.PersistentTilesFile
	windowCertificatesFile = job.WindowCertificatesFile
	persistencyPNG         = job.PersistencyPNG
	domainsFile            = job.DomainsFile
	aliveTilesFile         = job.AliveTilesFile
)

type (
	windowedReport = job.WindowsReport
	jsonFloat      = job.Float
)

var formatEnergy = job.FormatEnergy
