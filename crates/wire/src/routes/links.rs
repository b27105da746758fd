//! The links between operations (OpenAPI `links`), by `operationId`.

/// A link from one operation's answer to another operation (OpenAPI `links`): where the
/// next call's parameters come from. Tools that walk an API (schemathesis' stateful
/// phase) follow them to reach rows that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The operation whose answer carries the values.
    pub from: &'static str,
    /// The status of that answer.
    pub status: u16,
    /// The operation to call next.
    pub to: &'static str,
    /// `(parameter, runtime expression)`, e.g. `("id", "$response.body#/interaction/id")`.
    pub parameters: &'static [(&'static str, &'static str)],
}

const SAME_PROJECT: (&str, &str) = ("query.project_id", "$request.query.project_id");

/// The links between operations.
pub const LINKS: &[Link] = &[
    Link {
        from: "createInteraction",
        status: 200,
        to: "getInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "createInteraction",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "createInteractionWithoutSlash",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "queryInteractions",
        status: 200,
        to: "getInteraction",
        parameters: &[("id", "$response.body#/interactions/0/id"), SAME_PROJECT],
    },
    Link {
        from: "getInteraction",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "listTurns",
        parameters: &[("session_id", "$response.body#/session_id"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction_ids/0"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "getExecutionSession",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "requestIntervention",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "listExecutionEvents",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
];
