"""One registry of tools (evolve/tool_registry.py): the MCP server's implementations take exactly the parameters the
registry names, an agent session and a proposal are offered the same tools less what they fix themselves, and every
parameter says what it is."""
import inspect

from evolve import mcp_server
from evolve.agent_tools import AgentToolbox, Bounds
from evolve.knowledge import TOOLS as PROPOSAL_TOOLS
from evolve.tool_registry import MCP, PARAMETERS, PROPOSAL, SESSION, SESSION_FIXED, TOOLS


def test_every_parameter_is_described_once():
    used = {p for tool in TOOLS.values() for p in tool.parameters}
    assert used <= set(PARAMETERS)
    assert all(len(PARAMETERS[p].description) > 15 for p in used)
    assert all(set(tool.required) <= set(tool.parameters) for tool in TOOLS.values())


def test_the_server_implements_the_registry_s_tools_with_its_parameters():
    assert tuple(mcp_server.TOOLS) == MCP
    for name, function in mcp_server.TOOLS.items():
        signature = inspect.signature(function).parameters
        assert set(signature) == set(TOOLS[name].parameters), name
        no_default = {p for p, info in signature.items() if info.default is inspect.Parameter.empty}
        assert no_default == set(TOOLS[name].required), name


def test_a_session_and_a_proposal_are_offered_the_registry_s_tools_less_what_they_fix():
    box = AgentToolbox(None, None, problem=None, options=None, evaluate=None, bounds=Bounds(1, 1, 1.0, 1.0))
    for offered, names in ((box.schemas, SESSION), (PROPOSAL_TOOLS, PROPOSAL)):
        assert [t["function"]["name"] for t in offered] == list(names)
        for tool in offered:
            function = tool["function"]
            registered = TOOLS[function["name"]]
            assert function["description"] == registered.description
            properties = function["parameters"]["properties"]
            assert set(properties) == set(registered.parameters) - SESSION_FIXED
            assert all(properties[p]["description"] == PARAMETERS[p].description for p in properties)
    harness = [t["function"] for t in box.schemas if t["function"]["name"] in ("compile", "check", "time", "asm")]
    assert all(f["parameters"]["required"] == ["source"] for f in harness)  # with no file, the text is required
