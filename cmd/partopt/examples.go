package main

import "github.com/spf13/cobra"

// examples are the commands' examples (their --help), by command path; every
// command has some (TestEveryCommandExplainsItself), and every line runs as
// written: in a directory holding the files they name
// (TestHelpExamplesRunAsWritten), the cluster's on hosts nats, c1, c2 and c3
// with the paths they name (TestClusterHelpExamplesRunAsWritten).
var examples = map[string]string{
	"partopt": `  partopt solve model.uai -o result/           # prove persistent labels, whole model
  partopt run big.grid -o result/ --workers 8    # by windows over an embedded NATS
  partopt verify model.uai result/               # re-check the proof from the model alone
  partopt export result/ -o labels.png           # the labeling as an image`,
	"partopt info": `  partopt info model.uai
  partopt info --json scene.h5 | jq .variables`,
	"partopt solve": `  partopt solve model.uai -o result/
  partopt solve model.uai -o result/ --method trws --max-iterations 300
  partopt solve big.grid -o result/ --window 512 --workers 8
  partopt solve seg.uai -o result/ --method pbp --boundary original`,
	"partopt verify": `  partopt verify model.uai result/
  partopt verify big.grid fetched/   # a windowed or cluster result, window by window`,
	"partopt reduce": `  partopt solve model.uai -o result/ --method iri
  partopt reduce model.uai result/ -o left.uai   # what is left, for toulbar2 or any solver`,
	"partopt convert": `  partopt convert scene.h5 scene.uai
  partopt convert seg.uai seg.grid --tile 256`,
	"partopt gen": `  partopt gen seg fruits.jpg -o seg.grid --labels 8
  partopt gen stereo left.png right.png -o stereo.uai --disparities 16`,
	"partopt gen seg": `  partopt gen seg fruits.jpg -o seg.grid --labels 8 --lambda 2
  partopt gen seg fruits.jpg -o seg.uai.gz`,
	"partopt gen stereo": `  partopt gen stereo tsukuba1.bmp tsukuba2.bmp -o tsukuba.grid --disparities 16
  partopt gen stereo left.png right.png -o stereo.uai --disparities 32 --contrast`,
	"partopt gen tiled": `  partopt gen tiled fruits.jpg -o big.grid --width 600 --height 400 --labels 4   # 40000×25000: a gigapixel, 16 GB`,
	"partopt gen stereo-tiled": `  partopt gen stereo-tiled tsukuba1.bmp tsukuba2.bmp -o stereo.grid --width 1000 --height 800 --disparities 16
  partopt gen stereo-tiled left.tif right.tif -o cones.grid --width 600 --height 450 --disparities 32 --contrast`,
	"partopt run": `  partopt run big.grid -o result/
  partopt run model.uai -o result/ --window 200 --workers 4 --http localhost:8222
  partopt run big.grid -o result/ --listen 0.0.0.0:4222 --token-file /run/secrets/nats-token   # workers of other machines join`,
	"partopt server": `  partopt server --listen 127.0.0.1:4222 --dir /var/lib/partopt-nats
  partopt server --listen 0.0.0.0:4222 --dir /var/lib/partopt-nats --token-file /run/secrets/nats-token`,
	"partopt coordinator": `  partopt coordinator --nats nats://nats:4222 --data /var/lib/partopt --shared-root /srv/models
  partopt coordinator --nats nats://nats:4222 --token-file /run/secrets/nats-token --data /var/lib/partopt \
      --id c1 --raft-addr c1:7000 --peers c1=c1:7000,c2=c2:7000,c3=c3:7000 --bootstrap --http 0.0.0.0:8222`,
	"partopt worker": `  partopt worker --nats nats://nats:4222 --shared-root /srv/models
  NATS_URL=nats://nats:4222 partopt worker --token-file /run/secrets/nats-token --slots 4 --http 0.0.0.0:9090`,
	"partopt submit": `  JOB=$(partopt submit big.grid --window 512)
  partopt submit /srv/models/scene.uai --shared --method iri --job scene-1`,
	"partopt fetch": `  partopt fetch "$JOB" -o result/
  partopt status --wait "$JOB" && partopt fetch "$JOB" -o result/`,
	"partopt cancel": `  partopt cancel "$JOB" --reason "wrong model"`,
}

// setExamples gives root and its subcommands their examples.
func setExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if e, ok := examples[c.CommandPath()]; ok && c.Example == "" {
			c.Example = e
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
