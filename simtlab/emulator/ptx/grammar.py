"""The PTX grammar (ISA 8.x/9.x as NVRTC emits it), for lark's LALR(1) parser.

Why lark: a real grammar in one readable place, a well-kept pure-Python library (already a
dependency of JupyterLab's stack), and an LALR parser with a contextual lexer fast enough
for NVRTC's largest course module (conv.cu: 59,000 lines of PTX) in a few seconds. A token or
statement outside the grammar fails with lark's message naming the PTX line and column.
"""

PTX_GRAMMAR = r"""
start: _item*

_item: version | target | address_size | file | section | module_var | function | pragma

version: ".version" VERSION_NUMBER
target: ".target" IDENT ("," IDENT)*
address_size: ".address_size" INT
file: ".file" INT STRING ("," INT)*
section: ".section" SECTION_NAME "{" section_item* "}"
section_item: LABEL_DEF | DATA_TYPE data_list
data_list: INT ("," INT)*
pragma: ".pragma" STRING ";"

module_var: var_decl ";"
var_decl: LINKAGE* STATE_SPACE align? VEC_TYPE? DATA_TYPE var_name dims? initializer?
var_name: IDENT
align: ".align" INT
dims: dim+
dim: "[" INT? "]"
initializer: "=" (init_list | scalar_init)
init_list: "{" (init_item ("," init_item)*)? "}"
?init_item: scalar_init | init_list
scalar_init: INT | FLOAT_HEX | DOUBLE_HEX | IDENT

function: LINKAGE* KERNEL_KIND return_params? IDENT "(" [param ("," param)*] ")" perf_directive* (body | ";")
return_params: "(" param ("," param)* ")"
param: ".param" DATA_TYPE param_attr* IDENT dims?
     | ".param" align DATA_TYPE param_attr* IDENT dims?
param_attr: PTR_ATTR | STATE_SPACE | align
perf_directive: PERF_NAME INT ("," INT)*
              | ".noreturn"
              | ".explicitcluster"      -> explicit_cluster

body: "{" _statement* "}"
_statement: reg_decl | local_var | param_decl | label | loc | instruction | pragma | body
param_decl: ".param" align? DATA_TYPE IDENT dims? ";"
reg_decl: ".reg" VEC_TYPE? DATA_TYPE reg_name ("," reg_name)* ";"
reg_name: (REG | IDENT) ("<" INT ">")?
local_var: var_decl ";"
label: LABEL_DEF
loc: ".loc" INT INT INT ("," "function_name" IDENT "," "inlined_at" INT INT INT)?
instruction: guard? OPCODE (operand ("," operand)*)? ";"
guard: "@" NOT? REG
?operand: REG "|" REG            -> reg_pair
        | NOT REG                -> not_reg
        | REG                    -> reg
        | IDENT                  -> symbol
        | immediate
        | "[" addr_expr "]"      -> memory
        | "[" (REG | IDENT) "," "{" operand ("," operand)* "}" "]" -> tensor_memory
        | "{" operand ("," operand)* "}" -> vector
        | "(" operand ("," operand)* ")" -> vector
addr_expr: (REG | IDENT) ("+" INT)?
       | INT
immediate: INT | FLOAT_HEX | DOUBLE_HEX

NOT: "!"
VERSION_NUMBER: /\d+\.\d+/
SECTION_NAME: /\.[a-z_][a-z0-9_]*/
KERNEL_KIND: ".entry" | ".func"
LINKAGE: ".visible" | ".extern" | ".weak" | ".common"
STATE_SPACE: ".shared" | ".const" | ".global" | ".local"
PTR_ATTR: ".ptr"
PERF_NAME: ".maxntid" | ".reqntid" | ".minnctapersm" | ".maxnreg" | ".maxclusterrank"
         | ".reqnctapercluster"
VEC_TYPE: ".v2" | ".v4" | ".v8"
DATA_TYPE.2: /\.(b8|b16|b32|b64|b128|u8|u16|u32|u64|s8|s16|s32|s64|f16x2|f16|bf16x2|bf16|f32|f64|pred|e4m3x2|e5m2x2|tf32)\b/
LABEL_DEF.3: /[A-Za-z_$][A-Za-z0-9_$]*:/
OPCODE: /[a-z][a-z0-9_]*(\.[a-z0-9_]+(::[a-z0-9_]+)*)*/
REG: /%[A-Za-z_$][A-Za-z0-9_$]*(\.[xyz])?/
IDENT: /[A-Za-z_$][A-Za-z0-9_$]*/
FLOAT_HEX.2: /0[fF][0-9A-Fa-f]{8}/
DOUBLE_HEX.2: /0[dD][0-9A-Fa-f]{16}/
INT: /-?(0[xX][0-9A-Fa-f]+|0[0-7]*|[1-9][0-9]*)U?/
STRING: /"[^"\n]*"/

COMMENT: /\/\/[^\n]*/
BLOCK_COMMENT: /\/\*(.|\n)*?\*\//
%import common.WS
%ignore WS
%ignore COMMENT
%ignore BLOCK_COMMENT
"""
