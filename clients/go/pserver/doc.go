// Package pserver is the Go trainer client of pserver, a fault-tolerant parameter server. It
// behaves like the TypeScript client (libs/client): it follows the master's leader, keeps the
// trainer's session and a live cluster view, places tensors by the contract's rule (proto/README.md,
// "Placement"), elects one initializer, and runs every training step in an epoch context, so
// gradients computed under one view of the shards are never applied under another.
//
//	c, err := pserver.Connect(ctx, pserver.Options{Master: []string{"10.0.0.2:8200"}})
//	err = c.InitParams(ctx, map[string]pserver.Tensor{"w": pserver.Float32s(w)}, &pb.OptimizerConfig{})
//	err = c.Step(ctx, func(s *pserver.StepContext) error {
//		params, err := s.GetParams("w")
//		if err != nil {
//			return err
//		}
//		_, err = s.SendGrads(map[string]pserver.Tensor{"w": pserver.Float32s(grad(params["w"].Float32s()))})
//		return err
//	})
//
// Options.TLS and Options.Token secure every connection (mutual TLS, a bearer token over TLS);
// LoadSecurity reads them from files, DialOptions gives them to raw stubs.
package pserver
