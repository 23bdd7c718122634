// The Accel language: one grammar for schema files (stdlib/) and job specs.
// Nothing hand-written lives next to this file; compiler/parse walks the generated tree.
grammar Accel;

file : decl* EOF ;

decl
  : enumDecl
  | recordDecl
  | ruleDecl
  | jobDecl
  ;

// ---- schema declarations ------------------------------------------------------------------

enumDecl : doc? 'enum' name=ident '{' enumMember (',' enumMember)* ','? '}' ;
enumMember : doc? name=ident ('=' value=STRING)? ;

// `kwargs`, `plugin` and `config` are records with a role; `record` is a plain one.
recordDecl : doc? kind=('kwargs' | 'plugin' | 'config' | 'record') name=ident '{' member* '}' ;
member : fieldDecl | ruleDecl ;

fieldDecl
  : doc? name=ident ':' type ('=' defaultValue=expr)? envDefault? constraint? ';'?
  ;
envDefault : 'from' 'env' ID (',' ID)* ;
constraint : 'where' expr ;

type : typeAtom ('|' typeAtom)* ;
typeAtom
  : name=ident ('<' type (',' type)* '>')? optional='?'?
  ;

ruleDecl : doc? 'rule' code=ID severity=ID message=STRING ':' expr ';'? ;

// ---- job specs ----------------------------------------------------------------------------

jobDecl : doc? 'job' name=ident ('extends' base=ident)? block ;

block : '{' statement* '}' ;
statement
  : path block ';'?              # blockStatement
  | path '=' expr ';'?           # assignStatement
  ;
path : ident ('.' ident)* ;

// Declaration keywords are reserved only where they start a declaration, so schemas may
// still name a field `config`, `env` or `record`.
ident : ID | 'enum' | 'kwargs' | 'plugin' | 'config' | 'record' | 'rule' | 'job' | 'extends'
      | 'from' | 'env' | 'where' ;

// ---- expressions (shared) -----------------------------------------------------------------

expr
  : op=('-' | 'not') expr                                     # unaryExpr
  | expr op=('*' | '/' | '%') expr                            # binaryExpr
  | expr op=('+' | '-') expr                                  # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') expr      # binaryExpr
  | expr op='and' expr                                        # binaryExpr
  | expr op='or' expr                                         # binaryExpr
  | <assoc = right> expr op='implies' expr                    # binaryExpr
  | primary                                                   # primaryExpr
  ;

primary
  : literal                                  # literalPrimary
  | typeName=ident block                        # recordPrimary
  | callee=ident '(' (expr (',' expr)*)? ')'    # callPrimary
  | path                                     # pathPrimary
  | '[' (expr (',' expr)* ','?)? ']'         # listPrimary
  | '(' expr ')'                             # parenPrimary
  ;

literal : INT | FLOAT | STRING | DURATION | BYTES | 'true' | 'false' | 'none' ;

doc : DOC_COMMENT+ ;

// ---- lexer --------------------------------------------------------------------------------

DURATION : DIGITS ('ms' | 's' | 'm' | 'h') ;
BYTES    : DIGITS ('B' | 'KB' | 'MB' | 'GB' | 'TB' | 'KiB' | 'MiB' | 'GiB' | 'TiB') ;
FLOAT    : DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT      : DIGITS ;
STRING   : '"' (~["\\\r\n] | '\\' .)* '"' ;
ID       : [a-zA-Z_] [a-zA-Z0-9_]* ;

DOC_COMMENT  : '///' ~[\r\n]* ;
LINE_COMMENT : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT: '/*' .*? '*/' -> skip ;
WS           : [ \t\r\n]+ -> skip ;
// Anything else becomes one token the parser rejects with a located diagnostic.
UNEXPECTED   : . ;

fragment DIGITS   : [0-9] ('_'? [0-9])* ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
