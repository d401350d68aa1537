package protocol_test

import (
	"errors"
	"fmt"

	"github.com/partopt/partopt/protocol"
)

func ExampleUnmarshal() {
	job := "seg-01"
	labels := protocol.EncodeLabels(make([]int32, 6*4), 8) // nothing fixed yet
	task := protocol.WindowTask{
		Job: job, Round: 1, Window: 7,
		Core:  protocol.Rect{X0: 1, Y0: 1, W: 2, H: 2},
		Nodes: protocol.Rect{X0: 0, Y0: 0, W: 4, H: 4},
		Fixed: &protocol.Fixed{Rect: protocol.Rect{W: 6, H: 4}, Width: labels.Width,
			Data: protocol.NewPayload(labels.Data, protocol.FixedObject(job, 1, 7))},
	}
	data, err := protocol.Marshal(task)
	if err != nil {
		panic(err)
	}
	fmt.Println("publish on", protocol.DefaultNames.TaskSubject(job), "with Nats-Msg-Id", protocol.MsgID(job, 1, 7))

	msg, err := protocol.Unmarshal(data, protocol.MaxMessageBytes)
	if err != nil {
		fmt.Println("drop:", err)
		return
	}
	switch m := msg.(type) {
	case protocol.WindowTask:
		fixed, _ := m.Fixed.Labels(m.Fixed.Data.Inline).Decode()
		fmt.Printf("solve window %d of round %d: nodes %+v, %d fixed-label values\n", m.Window, m.Round, m.Nodes, len(fixed))
	case protocol.Cancel:
		fmt.Println("cancel", m.Job)
	}

	data[5] = 9 // a version this build does not speak
	_, err = protocol.Unmarshal(data, protocol.MaxMessageBytes)
	fmt.Println(errors.Is(err, protocol.ErrVersion), err)
	// Output:
	// publish on partopt.task.seg-01 with Nats-Msg-Id seg-01/1/7
	// solve window 7 of round 1: nodes {X0:0 Y0:0 W:4 H:4}, 24 fixed-label values
	// true protocol: message version 9, this build speaks version 4: protocol version mismatch
}
