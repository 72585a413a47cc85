"""What the stack knows about objects: categories, their parts, and what each part affords.

This is the single source of semantic knowledge. The procedural asset library labels its
geometry with these part names, the task parser resolves words to them, and the grounding
sources look regions up by them. A new object category is added here first
(see docs/adding_an_object.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Affordance vocabulary over parts (what touching or using a part achieves).
AFFORDANCES: tuple[str, ...] = (
    "grasp_handle",  # hold a tool or container by its handle
    "grasp_body",  # hold an object by its main body
    "pour_out",  # liquid leaves through here
    "pour_in",  # liquid or items enter through here
    "hang",  # a ring or hook that hangs on a peg
    "contain",  # holds things inside
    "support",  # things rest on it
    "press",  # a knob or button
    "pull",  # pulled to open
)


@dataclass(frozen=True)
class Category:
    """One object category.

    Attributes:
        name: Canonical category name, snake_case (``"paper_cup"``).
        parts: Part names in label order; label ``i`` of an asset's cloud is ``parts[i]``.
        affordances: For each part, the affordances it offers.
        default_grasp: Part grasped when a task names the object but no region.
        synonyms: Words a person uses for the category (the canonical name included).
        part_synonyms: Extra words for parts of this category (beyond ``PART_SYNONYMS``).
        articulated: True for furniture with joints (drawers, doors).
        fixed: True when the object is fixed to the world (furniture, racks), not free.
        elongated: True for objects that are grasped across their long axis (tools, bananas).
        hinged: Moving parts that swing about a hinge (a door), whose handle moves on an arc;
            the other moving parts of an articulated object slide straight out (a drawer).
        covers: True for a thing that closes an opening when put on it (a lid): put "on" a
            container it goes over the part that contains, resting on its rim, not on a part
            that supports (a pot's own lid, were it there).
        stacked: Groups of alike parts one above the other, top first (a chest's drawer
            handles): what tells them apart is their height, not their look.
    """

    name: str
    parts: tuple[str, ...]
    affordances: dict[str, tuple[str, ...]]
    default_grasp: str
    synonyms: tuple[str, ...] = ()
    part_synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    articulated: bool = False
    fixed: bool = False
    elongated: bool = False
    hinged: tuple[str, ...] = ()
    covers: bool = False
    stacked: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError(f"category {self.name!r} has no parts")
        if not {p for group in self.stacked for p in group} <= set(self.parts):
            raise ValueError(f"{self.name}: stacked names unknown parts {self.stacked}")
        if self.default_grasp not in self.parts:
            raise ValueError(f"{self.name}: default_grasp {self.default_grasp!r} not in {self.parts}")
        if not set(self.hinged) <= set(self.parts):
            extra = sorted(set(self.hinged) - set(self.parts))
            raise ValueError(f"{self.name}: hinged names unknown parts {extra}")
        unknown = set(self.affordances) - set(self.parts)
        if unknown:
            raise ValueError(f"{self.name}: affordances name unknown parts {sorted(unknown)}")
        for part, affs in self.affordances.items():
            bad = set(affs) - set(AFFORDANCES)
            if bad:
                raise ValueError(f"{self.name}.{part}: unknown affordances {sorted(bad)}")

    def stack_of(self, part: str) -> tuple[tuple[str, ...], int] | None:
        """The group of alike parts ``part`` is stacked in (top first) and its place there
        (0: the top); None when it is in none."""
        for group in self.stacked:
            if part in group:
                return group, group.index(part)
        return None

    def parts_with(self, affordance: str) -> tuple[str, ...]:
        """Parts of this category that offer ``affordance``, in label order."""
        return tuple(p for p in self.parts if affordance in self.affordances.get(p, ()))

    def holds_inside(self, part: str | None) -> bool:
        """Whether things put on ``part`` go inside it: it contains and does not support (a
        box's inside, a mug's body; not a plate, nor a pan, which supports too)."""
        affs = self.affordances.get(part or "", ())
        return "contain" in affs and "support" not in affs

    def is_spout(self, part: str | None) -> bool:
        """Whether ``part`` pours out without taking in: a spout, to one side, that the container
        tips towards. A part that does both (a cup's rim) is the opening, all round."""
        affs = self.affordances.get(part or "", ())
        return "pour_out" in affs and "pour_in" not in affs


def _c(
    name: str, parts: tuple[str, ...], aff: dict[str, tuple[str, ...]], default: str, **kw: object
) -> Category:
    # A copy: categories that share a table (_HANDLED_CUP) do not share one dict.
    return Category(name=name, parts=parts, affordances=dict(aff), default_grasp=default, **kw)  # type: ignore[arg-type]


#: A cup with a handle (a mug, a teacup): its parts, and what each affords.
_HANDLED_CUP: tuple[tuple[str, ...], dict[str, tuple[str, ...]]] = (
    ("body", "handle", "rim"),
    {
        "body": ("grasp_body", "contain"),
        "handle": ("grasp_handle", "hang"),
        "rim": ("pour_in", "pour_out"),
    },
)

CATEGORIES: dict[str, Category] = {
    c.name: c
    for c in (
        _c(
            "mug",
            *_HANDLED_CUP,
            "handle",
            synonyms=("mug", "cup", "coffee mug", "mugcup"),
        ),
        # AffordSim's hang_cup beside its hang_mugcup: a squat, flared cup with a small handle.
        # "cup" stays the mug's word (the sentences people wrote for the mug use it).
        _c(
            "teacup",
            *_HANDLED_CUP,
            "handle",
            synonyms=("teacup", "tea cup", "china cup", "porcelain cup"),
        ),
        _c(
            "paper_cup",
            ("body", "rim"),
            {"body": ("grasp_body", "contain"), "rim": ("pour_in", "pour_out")},
            "body",
            synonyms=("paper cup", "papercup", "disposable cup"),
        ),
        _c(
            "bowl",
            ("body", "rim"),
            {"body": ("grasp_body", "contain"), "rim": ("pour_in", "pour_out")},
            "rim",
            synonyms=("bowl",),
        ),
        _c(
            "plate",
            ("body", "rim"),
            {"body": ("support",), "rim": ("grasp_body",)},
            "rim",
            synonyms=("plate", "dish"),
        ),
        _c(
            "hammer",
            ("head", "handle"),
            {"head": ("press",), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("hammer", "mallet"),
            elongated=True,
        ),
        _c(
            "kettle",
            ("body", "handle", "spout", "lid"),
            {
                "body": ("grasp_body", "contain"),
                "handle": ("grasp_handle",),
                "spout": ("pour_out",),
                "lid": ("press",),
            },
            "handle",
            synonyms=("kettle", "teapot", "watering can"),
        ),
        _c(
            "pot",
            ("body", "handle", "lid", "knob"),
            {
                "body": ("contain", "grasp_body"),
                "handle": ("grasp_handle",),
                "lid": ("support",),
                "knob": ("press", "grasp_handle"),
            },
            "handle",
            synonyms=("pot", "saucepan", "cooking pot", "stockpot"),
        ),
        _c(
            "pan",
            ("body", "handle"),
            {"body": ("contain", "support"), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("pan", "frying pan", "skillet"),
            elongated=True,
        ),
        _c(
            "scoop",
            ("bowl", "handle"),
            {"bowl": ("contain", "pour_out"), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("scoop", "ladle", "spoon"),
            elongated=True,
        ),
        _c(
            "bottle",
            ("body", "cap"),
            {"body": ("grasp_body", "contain"), "cap": ("press", "pour_out")},
            "body",
            synonyms=("bottle", "water bottle"),
        ),
        _c(
            "banana",
            ("body",),
            {"body": ("grasp_body",)},
            "body",
            synonyms=("banana", "fruit"),
            elongated=True,
        ),
        _c(
            "box",
            ("body",),
            {"body": ("grasp_body",)},
            "body",
            synonyms=("box", "package", "carton"),
        ),
        _c("cube", ("body",), {"body": ("grasp_body",)}, "body", synonyms=("cube", "block")),
        # Leaves afford nothing: a tuft or a floppy leaf end gives no hold a gripper can trust,
        # and nothing is placed on, poured from or pressed on it. "By the leaves" still parses
        # (an explicit grasp is honoured), but no default or fallback grasp lands there.
        _c(
            "carrot",
            ("body", "leaves"),
            {"body": ("grasp_body",), "leaves": ()},
            "body",
            synonyms=("carrot",),
            part_synonyms={"body": ("root",)},
            elongated=True,
        ),
        _c(
            "leek",
            ("stalk", "leaves"),
            {"stalk": ("grasp_body",), "leaves": ()},
            "stalk",
            synonyms=("leek",),
            part_synonyms={"stalk": ("white part", "shank")},
            elongated=True,
        ),
        _c(
            "pen",
            ("body", "cap"),
            {"body": ("grasp_body",), "cap": ("press",)},
            "body",
            synonyms=("pen", "ballpoint", "ballpoint pen", "biro", "marker"),
            part_synonyms={"body": ("barrel",)},
            elongated=True,
        ),
        # A sealed can contains its soup as a bottle its water ("contain" as for the bottle);
        # nothing is put into it, so the asset is solid and not among the tests' hollow ones.
        _c(
            "soup_can",
            ("body", "lid"),
            {"body": ("grasp_body", "contain"), "lid": ("press",)},
            "body",
            synonyms=("soup can", "soupcan", "can", "tin can", "tin"),
        ),
        # The lid is the flat top of a closed carton: small things are set on it.
        _c(
            "chocolate_box",
            ("body", "lid"),
            {"body": ("grasp_body",), "lid": ("support",)},
            "body",
            synonyms=("chocolate box", "chocolatebox", "box of chocolates", "candy box"),
        ),
        _c(
            "sugar_box",
            ("body", "top"),
            {"body": ("grasp_body",), "top": ("support",)},
            "body",
            synonyms=("sugar box", "sugarbox", "box of sugar"),
            part_synonyms={"top": ("top face", "top side", "upper face")},
        ),
        _c(
            "cutting_board",
            ("board", "handle"),
            {"board": ("support",), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("cutting board", "cuttingboard", "chopping board", "board"),
        ),
        # AffordSim's Medium-tier objects. A pepper's stem is too short and thin to hold and
        # nothing is placed on it: like a carrot's leaves it affords nothing.
        _c(
            "bell_pepper",
            ("body", "stem"),
            {"body": ("grasp_body",), "stem": ()},
            "body",
            synonyms=("bell pepper", "green bell pepper", "pepper", "capsicum"),
        ),
        # The trigger head is part of the cap: pressed to spray, the way out of the liquid.
        _c(
            "scrub_bottle",
            ("body", "cap"),
            {"body": ("grasp_body", "contain"), "cap": ("press", "pour_out")},
            "body",
            synonyms=("scrub bottle", "scrubbottle", "spray bottle", "cleaner bottle", "cleaning bottle",
                      "cleanser bottle", "cleanser", "scrub cleanser", "scrubbing cleanser", "squeeze bottle",
                      "bottle of cleanser", "bottle of scrub", "bottle of scrub cleanser",
                      "bottle of scrubbing cleanser", "squeeze bottle of cleanser"),
            part_synonyms={"cap": ("trigger", "sprayer", "spray head", "nozzle")},
        ),
        # A cracker box lying on its broad face: pushed in the benchmark, small things set on it.
        _c(
            "cheese_box",
            ("body",),
            {"body": ("grasp_body", "support")},
            "body",
            synonyms=("cheese box", "cheez-it box", "cheezbox", "cracker box", "cheez it box",
                      "cheez it carton", "cheez-it carton", "cracker carton", "box of cheese crackers",
                      "box of crackers"),
        ),
        # Wider than the hand (a YCB coffee can is 0.102 m across): it is pushed, not picked up.
        _c(
            "coffee_can",
            ("body", "lid"),
            {"body": ("contain", "grasp_body"), "lid": ("press",)},
            "body",
            synonyms=("coffee can", "coffeecan", "coffee tin", "tin of coffee", "can of coffee"),
        ),
        # An open carton things are dropped into. Its rim is the top of a 3-5 mm cardboard wall:
        # pinched to hold the box, and where things go in; nothing rests on so thin an edge.
        _c(
            "paper_box",
            ("inside", "rim"),
            {"inside": ("contain",), "rim": ("grasp_body", "pour_in")},
            "rim",
            synonyms=("paper box", "paperbox", "cardboard box", "carton box"),
            part_synonyms={"inside": ("interior",)},
        ),
        _c(
            "basket",
            ("body", "rim", "handle"),
            {"body": ("contain",), "rim": ("pour_out", "pour_in"), "handle": ("grasp_handle",)},
            "handle",
            synonyms=("basket", "small basket"),
        ),
        # The plate comes first: a kettle put on the kettle base goes on the plate. The disc round
        # it is where a hand lifts the base (pinched at its edge).
        _c(
            "kettle_base",
            ("plate", "base"),
            {"plate": ("support",), "base": ("support", "grasp_body")},
            "base",
            synonyms=("kettle base", "base", "kettle stand", "power base"),
            part_synonyms={"plate": ("contact plate", "connector")},
        ),
        # The drip tray is what a hand takes out (to empty it) and where a cup goes.
        _c(
            "coffee_machine",
            ("body", "tray", "nozzle"),
            {"body": (), "tray": ("support",), "nozzle": ("pour_out",)},
            "tray",
            synonyms=("coffee machine", "coffeemachine", "espresso machine", "coffee maker"),
            part_synonyms={"tray": ("drip tray", "cup tray"), "nozzle": ("spout", "outlet")},
            fixed=True,
        ),
        # A pot lid on its own, wider than the hand: held by its knob. Only "lid" names it: "the
        # pot lid" stays the pot's lid, and "the lid" in a scene without one is a kettle's or a pot's.
        _c(
            "lid",
            ("lid", "knob"),
            {"lid": ("support",), "knob": ("grasp_handle", "press")},
            "knob",
            synonyms=("lid",),
            # A lid's knob is what people call its handle ("take the lid by its little handle"),
            # and its rim is the lid itself (it has no rim of its own to hold).
            part_synonyms={"knob": ("handle",), "lid": ("rim", "edge", "lip")},
            covers=True,
        ),
        _c(
            "rack",
            ("base", "pole", "hook"),
            {"base": ("support",), "pole": ("support",), "hook": ("hang",)},
            "pole",
            synonyms=("rack", "mug rack", "mug tree", "hook", "stand", "cup stand", "cup rack", "mug stand"),
            fixed=True,
        ),
        _c(
            "shelf",
            ("board", "frame"),
            {"board": ("support",), "frame": ("support",)},
            "board",
            synonyms=("shelf", "shelves", "shelf unit", "shelving unit", "shelving"),
            fixed=True,
        ),
        # The spot a pushed object must reach: nothing grasps it, things come to rest on it. Fixed
        # like a marker taped down (and a marking the physics does not collide with, mjcf.py). Its
        # one part is not called "surface": that word means the work surface (the table).
        _c(
            "target_mat",
            ("marking",),
            {"marking": ("support",)},
            "marking",
            synonyms=("target mat", "target", "target marker", "target area", "target zone", "target spot",
                      "mark", "goal", "goal marker", "goal area", "goal spot", "mat", "pad"),
            fixed=True,
        ),
        _c(
            "tray", ("base", "rim"), {"base": ("support",), "rim": ("grasp_body",)}, "rim", synonyms=("tray",)
        ),
        # A chest of three drawers, one above the other, with look-alike handles: the sentence
        # says which drawer ("open the bottom drawer"). No default grasp among them: "open the
        # chest" asks which.
        _c(
            "chest",
            ("body", "top_drawer", "top_drawer_handle", "middle_drawer", "middle_drawer_handle",
             "bottom_drawer", "bottom_drawer_handle"),
            {
                "body": ("support", "contain"),
                "top_drawer": ("contain",),
                "top_drawer_handle": ("pull",),
                "middle_drawer": ("contain",),
                "middle_drawer_handle": ("pull",),
                "bottom_drawer": ("contain",),
                "bottom_drawer_handle": ("pull",),
            },
            "body",
            synonyms=("chest", "chest of drawers", "drawer unit", "drawer chest", "set of drawers"),
            part_synonyms={
                "top_drawer": ("top drawer", "upper drawer", "uppermost drawer", "highest drawer",
                               "first drawer", "topmost drawer"),
                "top_drawer_handle": ("top drawer handle", "top handle", "upper handle", "top drawer pull",
                                      "upper drawer handle", "highest handle"),
                "middle_drawer": ("middle drawer", "centre drawer", "center drawer", "second drawer"),
                "middle_drawer_handle": ("middle drawer handle", "middle handle", "middle drawer pull",
                                         "centre handle", "center handle"),
                "bottom_drawer": ("bottom drawer", "lowest drawer", "bottommost drawer", "third drawer",
                                  "last drawer", "lower drawer"),
                "bottom_drawer_handle": ("bottom drawer handle", "bottom handle", "lowest handle",
                                         "bottom drawer pull", "lower handle", "lower drawer handle"),
            },
            articulated=True,
            fixed=True,
            # The handles, where the grasp goes; the fronts share one plane, so the pull's
            # direction is the same from any of them.
            stacked=(("top_drawer_handle", "middle_drawer_handle", "bottom_drawer_handle"),),
        ),
        _c(
            "cabinet",
            ("body", "drawer", "drawer_handle", "door", "door_handle"),
            {
                "body": ("support", "contain"),
                "drawer": ("contain",),
                "drawer_handle": ("pull",),
                "door": ("contain",),
                "door_handle": ("pull",),
            },
            "drawer_handle",
            synonyms=("cabinet", "cupboard", "drawer", "dresser"),
            articulated=True,
            fixed=True,
            hinged=("door",),
        ),
        _c(
            "microwave",
            ("body", "door", "door_handle"),
            {"body": ("contain",), "door": ("contain",), "door_handle": ("pull",)},
            "door_handle",
            synonyms=("microwave", "microwave oven", "oven"),
            articulated=True,
            fixed=True,
            hinged=("door",),
        ),
    )
}

# Words for parts shared across categories.
PART_SYNONYMS: dict[str, tuple[str, ...]] = {
    "handle": ("handle", "grip", "handgrip", "shaft", "stem", "where you hold it", "loop"),
    "body": ("body", "side", "outside", "wall", "middle"),
    "rim": ("rim", "edge", "lip", "opening", "mouth", "top edge"),
    "spout": ("spout", "nozzle", "snout"),
    "lid": ("lid", "cover", "top"),
    "knob": ("knob",),
    "cap": ("cap",),
    "head": ("head", "striking face", "face"),
    "bowl": ("bowl", "cup end", "scoop end"),
    "hook": ("hook", "peg", "arm"),
    "pole": ("pole", "post", "column"),
    "base": ("base", "bottom", "foot"),
    "board": ("board", "plank"),
    "frame": ("frame",),
    "drawer": ("drawer",),
    "drawer_handle": ("drawer handle", "drawer pull"),
    "door": ("door",),
    "door_handle": ("door handle", "door pull"),
    "leaves": ("leaves", "leaf", "greens", "foliage"),
}


def category(name: str) -> Category:
    """The category called ``name``; a clear error listing the known ones otherwise."""
    try:
        return CATEGORIES[name]
    except KeyError:
        raise KeyError(f"unknown object category {name!r}; known: {', '.join(sorted(CATEGORIES))}") from None
