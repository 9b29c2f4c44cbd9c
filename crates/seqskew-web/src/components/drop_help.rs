//! "What should I drop?": beside the drop zone, what to bring for each question, so a first
//! visit does not start with a search of the docs (the recipes are docs/capture.md).

use yew::prelude::*;

#[function_component(DropHelp)]
pub fn drop_help() -> Html {
    html! {
        <details id="drop-help" class="header-fold">
            <summary>{"What should I drop?"}</summary>
            <ul>
                <li><strong>{"A job that straggles, profiled: "}</strong>
                    {"every rank's PyTorch profiler trace ("}<code>{"*.pt.trace.json.gz"}</code>
                    {", torch.profiler with tensorboard_trace_handler), 5–10 steps after warm-up. Mark each step's document lengths with "}
                    <code>{"record_function(\"seqlens=…\")"}</code>{" and the verdict can weigh them."}</li>
                <li><strong>{"Not profiled: "}</strong>
                    {"a seqskew step log ("}<code>{"*.jsonl"}</code>{"): one line per rank and step with its time and lengths, a few lines in your training loop."}</li>
                <li><strong>{"A job that failed: "}</strong>
                    {"the torchrun console or its --log-dir folder, torchrun error files, Flight Recorder dumps ("}
                    <code>{"nccl_trace_rank_N"}</code>{"), or paste the terminal in the box below."}</li>
                <li><strong>{"Too big for a browser: "}</strong>
                    <code>{"seqskew summarize"}</code>{" where the traces are (one small step log per node), then drop the summaries."}</li>
            </ul>
            <p>{"Recipes for torch.profiler, torchtitan, Megatron-LM, Hugging Face and DeepSpeed: docs/capture.md in the seqskew repository."}</p>
        </details>
    }
}
