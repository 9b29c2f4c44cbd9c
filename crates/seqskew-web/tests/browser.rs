//! The page side, in a real browser: the message codec and the components.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expectation is the test failing

use gloo::worker::Codec;
use seqskew_web::protocol::{InputFile, JsCodec, Request, Response};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn blobs_and_payloads_cross_the_codec_as_themselves() {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(&b"hello"[..]));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).expect("a blob");
    let request =
        Request::Analyze { job: 3, files: vec![InputFile { name: "a.json".into(), size: 5, blob: blob.clone() }] };
    let value = JsCodec::encode(request);
    let Request::Analyze { job, files } = JsCodec::decode::<Request>(value) else { panic!("wrong variant") };
    assert_eq!(job, 3);
    assert_eq!(files[0].blob.size(), 5.0);
    assert!(js_sys::Object::is(&files[0].blob, &blob), "the blob was copied instead of passed");

    let request =
        Request::Import { job: 4, files: vec![(7, InputFile { name: "b.json".into(), size: 5, blob: blob.clone() })] };
    let Request::Import { job, files } = JsCodec::decode::<Request>(JsCodec::encode(request)) else {
        panic!("wrong variant")
    };
    assert_eq!((job, files[0].0, files[0].1.name.as_str()), (4, 7, "b.json"));
    assert!(js_sys::Object::is(&files[0].1.blob, &blob), "an import worker's blob was copied instead of passed");

    let sent = js_sys::Uint8Array::from(&[1u8, 2, 3][..]);
    let value = JsCodec::encode(Response::Done { job: 3, payload: sent.clone() });
    let payload =
        js_sys::Reflect::get(&js_sys::Reflect::get(&value, &"Done".into()).unwrap(), &"payload".into()).unwrap();
    assert!(js_sys::Object::is(&payload, &sent), "the payload should pass as the same Uint8Array");
    let Response::Done { payload, .. } = JsCodec::decode::<Response>(value) else { panic!("wrong variant") };
    assert_eq!(payload.to_vec(), vec![1, 2, 3]);
}

#[wasm_bindgen_test]
fn results_round_trip_through_javascript_memory_with_spans_packed() {
    use seqskew_core::model::SpanKind;
    use seqskew_plot::timeline::{Lane, LaneSpan, LaneStep, TimelineData};
    use seqskew_web::protocol::{JobResult, decode, encode};

    // More spans than one 64 KiB piece holds, so reading and writing cross pieces.
    let n = 10_000;
    let spans = (0..n).map(|i| {
        let kind = SpanKind::ALL[i % SpanKind::ALL.len()];
        LaneSpan::new(i as f64 * 1.5, 1.25, kind, (i % 3 > 0).then_some(i as u32 % 7))
    });
    let step = LaneStep { step: 1, start: 0.0, duration: 1.5 * n as f64, ..LaneStep::default() };
    let lane = Lane::new(0, "rank 0".into(), 0, vec![(step, spans.collect())]);
    let result = JobResult {
        workers: 1,
        steps: 1,
        timeline: Some(std::rc::Rc::new(TimelineData { lanes: vec![lane], stages: 1, end: 1.5 * n as f64 })),
        ..JobResult::default()
    };
    let payload = encode(&result);
    // 15 bytes a span (start, duration, kind, micro-batch), plus 4 for the lane's summary.
    assert!(payload.length() as usize <= n * 19 + 500, "{} bytes", payload.length());
    assert_eq!(decode::<JobResult>(&payload), Ok(result));
    // A cut payload is an error, not a panic.
    assert!(decode::<JobResult>(&payload.subarray(0, payload.length() / 2)).is_err());
}

#[wasm_bindgen_test]
fn an_import_workers_files_round_trip_with_their_indices() {
    use seqskew_core::import::{FileImport, FileIngest};
    use seqskew_web::protocol::{Imports, decode, encode};

    let mut ingest = FileIngest::new("log.jsonl");
    ingest.feed(b"{\"step\":1,\"rank\":0,\"step_s\":1.0,\"lengths\":[3,4]}\n{\"step\":1,\"rank\":1,\"step_s\":2.0}\n");
    let import = ingest.finish();
    assert_eq!(import.workers.len(), 2);
    let imports: Imports = vec![(3, import), (0, FileImport { file: "empty.json".into(), ..FileImport::default() })];
    assert_eq!(decode::<Imports>(&encode(&imports)), Ok(imports));
}

mod components {
    use std::rc::Rc;

    use seqskew_core::analysis::Analysis;
    use seqskew_core::report::{Report, Signal, Verdict};
    use seqskew_web::components::shared::Shared;
    use seqskew_web::components::verdict::{Props, VerdictPanel};
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::wasm_bindgen_test;
    use yew::Callback;

    /// Renders `props` into a fresh element and waits for yew to paint.
    async fn render(props: Props) -> web_sys::Element {
        let document = web_sys::window().unwrap().document().unwrap();
        let root = document.create_element("div").unwrap();
        document.body().unwrap().append_child(&root).unwrap();
        yew::Renderer::<VerdictPanel>::with_root_and_props(root.clone(), props).render();
        gloo::timers::future::TimeoutFuture::new(10).await;
        root
    }

    fn report() -> Report {
        Report {
            verdict: Verdict {
                primary: "slow_worker".into(),
                confidence: "high".into(),
                headline: "Slow worker: rank 3.".into(),
                ..Verdict::default()
            },
            signals: vec![Signal {
                id: "rotation".into(),
                name: "Initiating worker rotates".into(),
                applicable: true,
                passed: false,
                sentence: "rank 3 led every step".into(),
                ..Signal::default()
            }],
            verify_command: "seqskew check AFTER/".into(),
            ..Report::default()
        }
    }

    #[wasm_bindgen_test]
    async fn the_verdict_exposes_its_hooks_once_analysed() {
        let analysis = Some(Shared(Rc::new(Analysis { report: report(), ..Analysis::default() })));
        let root = render(Props {
            files: "a.json,b.json".into(),
            analysis,
            pending: false,
            on_show_files: Callback::noop(),
            failure: None,
            why_none: "".into(),
        })
        .await;
        let v = root.query_selector("#verdict").unwrap().expect("#verdict");
        assert_eq!(v.get_attribute("data-cause").as_deref(), Some("slow_worker"));
        assert_eq!(v.get_attribute("data-files").as_deref(), Some("a.json,b.json"));
        let text = v.text_content().unwrap_or_default();
        assert!(
            text.contains("Slow worker: rank 3.")
                && text.contains("rank 3 led every step")
                && text.contains("seqskew check AFTER/"),
            "{text}"
        );
        assert!(v.query_selector("button[aria-label='Copy the verification command']").unwrap().is_some());
    }

    #[wasm_bindgen_test]
    async fn input_problems_are_named_under_the_verdict_with_the_way_to_every_file() {
        use seqskew_core::diag::{Diagnostic, Severity};
        let mut troubled = report();
        let warning = |k: usize| Diagnostic::new(Severity::Warning, &format!("r{k}.json"), None, "truncated");
        troubled.job.diagnostics = (0..7).map(warning).collect();
        troubled.job.diagnostics.push(Diagnostic::new(Severity::Info, "", None, "clocks aligned"));
        let analysis = Some(Shared(Rc::new(Analysis { report: troubled, ..Analysis::default() })));
        let shown = Rc::new(std::cell::Cell::new(false));
        let on_show_files = {
            let shown = shown.clone();
            Callback::from(move |()| shown.set(true))
        };
        let root = render(Props {
            files: "a.json".into(),
            analysis,
            pending: false,
            on_show_files,
            failure: None,
            why_none: "".into(),
        })
        .await;
        let problems = root.query_selector("#verdict .input-problems").unwrap().expect("the input problems");
        assert_eq!(problems.query_selector_all("li").unwrap().length(), 5, "at most five, information left out");
        let text = problems.text_content().unwrap_or_default();
        assert!(text.contains("warning: r0.json: truncated") && !text.contains("clocks aligned"), "{text}");
        let button = problems.query_selector("button").unwrap().expect("a button");
        assert_eq!(button.text_content().as_deref(), Some("2 more: see every file"));
        button.unchecked_into::<web_sys::HtmlElement>().click();
        assert!(shown.get(), "the button shows the files");

        let clean = Some(Shared(Rc::new(Analysis { report: report(), ..Analysis::default() })));
        let root = render(Props {
            files: "a.json".into(),
            analysis: clean,
            pending: false,
            on_show_files: Callback::noop(),
            failure: None,
            why_none: "".into(),
        })
        .await;
        assert!(root.query_selector(".input-problems").unwrap().is_none(), "no problems, no list");
    }

    #[wasm_bindgen_test]
    async fn time_in_collectives_of_a_partial_job_is_not_called_communication() {
        use seqskew_core::report::CauseShare;
        let labels = |r: Report| async move {
            let analysis = Some(Shared(Rc::new(Analysis { report: r, ..Analysis::default() })));
            let root = render(Props {
                files: "a.json".into(),
                analysis,
                pending: false,
                on_show_files: Callback::noop(),
                failure: None,
                why_none: "".into(),
            })
            .await;
            let label = root.query_selector("#verdict .shares .share-label").unwrap().expect("a share");
            label.text_content().unwrap_or_default()
        };
        let mut r = report();
        r.slowdown.by_cause = vec![CauseShare { cause: "communication".into(), share: 1.0 }];
        r.job.workers = 8;
        assert_eq!(labels(r.clone()).await, "Communication");
        r.job.workers = 1;
        r.job.world_size = Some(8);
        assert_eq!(labels(r).await, "Collectives (transfer, or waiting for ranks not loaded)");
    }

    #[wasm_bindgen_test]
    async fn while_analysing_the_hooks_are_absent() {
        let root = render(Props {
            files: "".into(),
            analysis: None,
            pending: true,
            on_show_files: Callback::noop(),
            failure: None,
            why_none: "".into(),
        })
        .await;
        let v = root.query_selector("#verdict").unwrap().expect("#verdict");
        assert_eq!(v.get_attribute("data-cause"), None);
        assert_eq!(v.get_attribute("aria-busy").as_deref(), Some("true"));
    }
}
