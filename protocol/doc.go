// Package protocol is the wire format between the partopt coordinator and its
// workers: the message types, the envelope that carries them, the size limits,
// and the names of every JetStream stream, subject, consumer and bucket. It is
// pure code: it knows nothing of NATS connections, so both sides and their tests
// share one definition of what travels.
//
// A message is a fixed 7-byte header — the magic "popt", the protocol Version
// (uint16, big-endian) and the message Type (uint8) — followed by a msgpack map
// with short keys. Unmarshal checks the size limit, the magic, the version and
// the type before it decodes anything, then checks that every length the body
// declares fits in the bytes received, so a hostile or corrupt message costs at
// most a small multiple of its own size. Every error wraps ErrTooLarge,
// ErrVersion or ErrMalformed: a receiver logs it and drops (terminates) the
// message. Fields a receiver does not know are skipped, so a field can be added
// within a version; removing or changing one needs a new Version.
//
// Bulk arrays (labelings) travel as Labels: raw little-endian blobs of 1, 2 or 4
// bytes per value, never msgpack arrays. A Payload carries bytes either inline or
// as a reference to an object in the JetStream object store (ObjectBucket);
// senders must use the object store above InlineLimit, which keeps a task under
// MaxMessageBytes, the NATS default max_payload. A WindowResult carries two
// blobs and can exceed it (2 bytes per label from K = 255 on): a worker then
// stores the marshalled result as ResultObject and publishes a ResultRef.
//
// A job is a raster (JobSpec.Layout empty or LayoutRaster: windows are Rects)
// or a graph (LayoutGraph: a model of any structure, windows are BFS regions of
// its variables). A graph task carries a GraphWindow: its node list and the
// labels fixed over its extent as Values, blobs inline or in ObjectBucket like
// a Payload; DecodeNodes checks the list's count against the model before it
// reads a byte of it, then that the nodes are strictly ascending variables.
//
// A label-elimination job (JobSpec.Method MethodIRI, since Version 2) is a graph
// job: its task carries the window's undecided nodes and their extent's alive
// labels (GraphWindow.Domains, EncodeDomains's bits; DecodeDomains checks the size
// against the extent's label counts and that no domain is empty), its result the
// window's elimination with certificates in the persistency result file format
// (WindowResult.Elimination), which the coordinator re-checks before merging.
// A raster label-elimination job (MethodIRI with layout raster, RasterIRI: a
// .grid eliminated out of core) sends rectangles instead, with the labels
// alive over the nodes grown by one pixel (WindowTask.Domains, the job's
// Labels bits a pixel; DecodeRasterDomains checks the size against the
// extent before decoding); its nodes are the pixels with more than one label
// alive (RasterWindowNodes), its result an elimination as a graph window's.
//
// Typical use, a coordinator sending a task and a worker receiving it:
//
//	data, err := protocol.Marshal(protocol.WindowTask{Job: job, Round: 0, Window: 7, Core: core, Nodes: nodes})
//	// publish data on protocol.TaskSubject(job) with header
//	// Nats-Msg-Id: protocol.TaskMsgID(job, 0, 7, epoch)
//
//	msg, err := protocol.Unmarshal(data, protocol.MaxMessageBytes)
//	if err != nil {
//		log.Printf("dropping message: %v", err) // never redeliver: it will not get better
//		return
//	}
//	switch m := msg.(type) {
//	case protocol.WindowTask:
//		// solve m.Nodes, conditioned on m.Fixed
//	case protocol.Error:
//		// ...
//	}
//
// Decode[T] is the typed form, for a subject that carries one type only:
//
//	task, err := protocol.Decode[protocol.WindowTask](data, protocol.MaxMessageBytes)
package protocol
