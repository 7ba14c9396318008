//! PROTOCOL.md quotes every Lua script verbatim and is the rendering of doc/PROTOCOL.md.in.

use ocpp_cluster::scripts;

fn protocol() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/PROTOCOL.md")).unwrap()
}

#[test]
fn protocol_md_quotes_every_script_verbatim() {
    let protocol = protocol();
    for (name, text) in scripts::ALL {
        let quoted = format!("```lua\n{}\n```", text.trim_end_matches('\n'));
        assert!(
            protocol.contains(&quoted),
            "PROTOCOL.md does not quote {name} as it is in src/scripts/ (run python3 doc/render.py)"
        );
    }
}

#[test]
fn protocol_md_is_rendered_from_its_template() {
    let template =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/PROTOCOL.md.in"))
            .unwrap();
    let mut rendered = template;
    for (name, text) in scripts::ALL {
        rendered = rendered.replace(&format!("{{{{{name}}}}}"), text.trim_end_matches('\n'));
    }
    assert!(!rendered.contains("{{"), "a placeholder without a script");
    assert_eq!(rendered, protocol(), "run python3 doc/render.py");
}

#[test]
fn every_script_is_in_the_list() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/scripts");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut listed: Vec<String> = scripts::ALL.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
}
